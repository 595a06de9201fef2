"""The web view in a real browser: headless Chromium against ``profstore serve`` on the
fixture store. Expected values come from the fixture CSVs as written (read here with the
csv module) and from hand arithmetic on them, never from profstore."""

from __future__ import annotations

import json
import statistics
import struct
import urllib.request
from pathlib import Path

import pytest
from profstore.storage import schema

from tests.support.cli_fixture import RMS_OP

pytestmark = pytest.mark.sqlite_only
VERSION = "v0.18"


def rms(tokens: int, hidden: int = 7168) -> str:
    return json.dumps({"op": RMS_OP,
                       "args": [{"shape": [tokens, hidden], "dtype": "bfloat16"},
                                {"shape": [hidden], "dtype": "bfloat16"}, 1e-6],
                       "outputs": [{"shape": [tokens, hidden], "dtype": "bfloat16"}]})


def rms_latencies(served) -> dict[tuple[int, int], list[float]]:
    """(tokens, hidden) -> the finite latencies of RmsNorm.csv, in file order."""
    found: dict[tuple[int, int], list[float]] = {}
    for row in served.csv_rows("RmsNorm"):
        first = row["Input Shapes"].strip('"').split(";")[0]
        tokens, hidden = (int(v) for v in first.split(","))
        latency = float(row["Average Duration(us)"])
        if latency == latency:
            found.setdefault((tokens, hidden), []).append(latency)
    return found


def open_page(browser, served, path: str, shots: Path, name: str) -> None:
    browser.get(served.url + path.lstrip("/"))
    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(1280, min(max(height + 80, 800), 3000))
    browser.save_screenshot(str(shots / f"{name}.png"))


def cells(browser, selector: str) -> list[list[str]]:
    rows = browser.find_elements("css selector", f"{selector} tbody tr")
    return [[c.text for c in r.find_elements("css selector", "td")] for r in rows]


def column_index(browser, selector: str, title: str) -> int:
    heads = [h.text.strip() for h in browser.find_elements("css selector", f"{selector} th")]
    return heads.index(title)


def test_index_and_database_page_list_every_table(browser, served, screenshots):
    open_page(browser, served, "/", screenshots, "index")
    assert browser.find_element("link text", served.database)
    assert "explain a descriptor" in browser.page_source
    open_page(browser, served, f"/{served.database}", screenshots, "database")
    links = {a.text for a in browser.find_elements("css selector", "h3 a, li a")}
    expected = set(schema.metadata.tables) | {"regimes", "duplicates"}
    assert expected <= links
    assert {"Regimes of a kernel", "The points of one regime",
            "Duplicates that disagree by more than a given percent"} <= links


def test_kernel_regimes_query_returns_the_csv_regimes(browser, served, screenshots):
    open_page(browser, served, f"/{served.database}/kernel_regimes?kernel=RmsNorm"
              f"&version={VERSION}", screenshots, "kernel_regimes")
    table = "table.rows-and-columns"
    got = {(r[column_index(browser, table, "path")],
            json.loads(r[column_index(browser, table, "regime_key")])["shape_signature"],
            int(r[column_index(browser, table, "points")]),
            float(r[column_index(browser, table, "axis_0_min")]),
            float(r[column_index(browser, table, "axis_0_max")]))
           for r in cells(browser, table)}
    by_hidden: dict[int, list[int]] = {}
    for (tokens, hidden), values in rms_latencies(served).items():
        by_hidden.setdefault(hidden, []).extend([tokens] * len(values))
    expected = {("generic", f"T,{h};{h}", len(t), float(min(t)), float(max(t)))
                for h, t in by_hidden.items()}
    assert {row for row in got if row[0] == "generic"} == expected


@pytest.mark.parametrize("percent", [5, 20])
def test_wide_duplicates_query_uses_the_percent(browser, served, screenshots, percent):
    open_page(browser, served, f"/{served.database}/wide_duplicates?percent={percent}",
              screenshots, f"wide_duplicates_{percent}")
    table = "table.rows-and-columns"
    rows = [(float(r[column_index(browser, table, "axis_0")]),
             float(r[column_index(browser, table, "spread_percent")]))
            for r in cells(browser, table)] if browser.find_elements("css selector", table) \
        else []
    expected = []
    for (tokens, _), values in rms_latencies(served).items():
        if len(values) > 1:
            spread = 100 * (max(values) - min(values)) / statistics.median(values)
            if spread > percent:
                expected.append((float(tokens), round(spread, 2)))
    assert sorted(rows) == sorted(expected)
    assert (percent == 5) == bool(expected)


def png_size(url: str) -> tuple[int, int, bytes]:
    with urllib.request.urlopen(url, timeout=120) as response:
        assert response.headers["content-type"] == "image/png"
        body = response.read()
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", body[16:24])
    return width, height, body


def test_regime_page_shows_its_picture_and_holdout(browser, served, screenshots):
    open_page(browser, served, f"/{served.database}/kernel_regimes?kernel=RmsNorm"
              f"&version={VERSION}", screenshots, "before_regime")
    link = next(a for a in browser.find_elements("css selector", "a.profstore-regime")
                if '"T,7168;7168"' in a.text)
    link.click()
    browser.save_screenshot(str(screenshots / "regime.png"))
    image = browser.find_element("id", "regime-figure")
    browser.execute_script("arguments[0].scrollIntoView()", image)
    assert browser.execute_script("return arguments[0].complete", image)
    natural = browser.execute_script(
        "return [arguments[0].naturalWidth, arguments[0].naturalHeight]", image)
    width, height, body = png_size(image.get_attribute("src"))
    assert natural == [width, height]
    assert width >= 600 and height >= 400 and len(body) > 10_000
    shown = browser.execute_script(
        "return [arguments[0].clientWidth, arguments[0].clientHeight]", image)
    assert shown[0] > 0 and abs(shown[0] / shown[1] - width / height) < 0.02
    browser.set_window_size(1280, 2200)
    browser.save_screenshot(str(screenshots / "regime_full.png"))
    latencies = rms_latencies(served)
    low, mid, high = 8, 16, 64
    y_low, y_high = latencies[(low, 7168)][0], statistics.median(latencies[(high, 7168)])
    predicted = y_low + (y_high - y_low) * (mid - low) / (high - low)
    truth = latencies[(mid, 7168)][0]
    rows = {r[0]: r for r in cells(browser, "#holdout-points")}
    assert set(rows) == {str(low), str(mid), str(high)}
    assert float(rows[str(mid)][2]) == truth
    assert float(rows[str(mid)][3]) == pytest.approx(predicted, rel=1e-6)
    assert float(rows[str(mid)][4]) == pytest.approx(
        abs(predicted - truth) / truth * 100, abs=0.006)
    assert rows[str(low)][-1] == rows[str(high)][-1] == "hull boundary"


def test_explain_page_answers_measured_and_interpolated(browser, served, screenshots):
    latencies = rms_latencies(served)
    open_page(browser, served, "/-/profstore/explain", screenshots, "explain_form")
    box = browser.find_element("id", "descriptor")
    box.clear()
    box.send_keys(rms(16))
    browser.find_element("id", "explain-submit").click()
    browser.save_screenshot(str(screenshots / "explain_measured.png"))
    assert browser.find_element("id", "answer-source").text == "MEASURED"
    assert browser.find_element("id", "answer-latency").text == \
        f"{latencies[(16, 7168)][0]:g} us"
    low, high = latencies[(16, 7168)][0], statistics.median(latencies[(64, 7168)])
    expected = low + (high - low) * (28 - 16) / (64 - 16)
    open_page(browser, served, "/-/profstore/explain?version=v0.18&descriptor="
              + urllib.request.quote(rms(28)), screenshots, "explain_interpolated")
    assert browser.find_element("id", "answer-source").text == "INTERPOLATED"
    assert float(browser.find_element("id", "answer-latency").text.split()[0]) == \
        pytest.approx(expected, rel=1e-9)
    sections = {e.get_attribute("data-title") for e in
                browser.find_elements("css selector", "pre.section")}
    assert {"mapping", "ownership", "base exact lookup", "target",
            "interpolation path", "result"} <= sections
    used = cells(browser, "#rows-used")
    assert [(r[1], r[2], r[5]) for r in used] == [("3", "16", "0.75"), ("4", "64", "0.25")]
    browser.find_elements("css selector", "a.row-link")[0].click()
    browser.save_screenshot(str(screenshots / "explain_row.png"))
    assert f"/{served.database}/sample/" in browser.current_url
    assert "16,7168;7168" in browser.page_source


@pytest.mark.parametrize(("descriptor", "message"), [
    ('{"op": ', "descriptor: invalid JSON: "),
    ('{"op": "x", "args": 5}', "args: must be a list, got 5"),
])
def test_explain_page_shows_the_descriptor_error(browser, served, screenshots, descriptor,
                                                 message):
    open_page(browser, served, "/-/profstore/explain?descriptor="
              + urllib.request.quote(descriptor), screenshots, "explain_error")
    error = browser.find_element("id", "profstore-error").text
    assert error.startswith(message)
    assert "Traceback" not in browser.page_source
    assert not browser.find_elements("id", "answer")


def test_overview_page_draws_the_version(browser, served, screenshots):
    open_page(browser, served, f"/-/profstore/overview?version={VERSION}", screenshots,
              "overview")
    image = browser.find_element("id", "overview-figure")
    natural = browser.execute_script(
        "return [arguments[0].naturalWidth, arguments[0].naturalHeight]", image)
    width, height, _ = png_size(image.get_attribute("src"))
    assert natural == [width, height] and width >= 600
    rows = {r[0]: r for r in cells(browser, "table.rows-and-columns")}
    points = sum(len(v) for v in rms_latencies(served).values())
    assert rows["RmsNorm"][1:3] == [str(points), "2"]
