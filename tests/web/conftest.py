"""A served fixture store and a headless Chromium driving it.

The store is tests/cli's hand-computable fixture version (v0.18: RmsNorm with a duplicate
coordinate and a NaN row, Add with a broken line, Range with no inputs), ingested into a
SQLite file and served by ``python -m profstore serve --port 0`` as a subprocess; the
browser is Debian's chromium with its chromedriver (never a downloaded one). Without
them the tests skip locally and fail under CI=true (tests.support.prerequisites).
Screenshots go to a temporary directory ($PROFSTORE_SCREENSHOTS), printed at the end.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli_fixture import ingest_into, write_fixture
from tests.support.prerequisites import require

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,1000")
START_TIMEOUT = 90.0


@dataclass
class Served:
    """A running ``profstore serve``: its base URL (ending in /), database name and file."""

    url: str
    database: str
    path: Path
    csv_dir: Path

    def csv_rows(self, kernel: str) -> list[dict[str, str]]:
        """The fixture CSV of ``kernel`` as written, read without profstore."""
        with (self.csv_dir / f"{kernel}.csv").open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))


def start_server(db: Path) -> tuple[subprocess.Popen, str]:
    """Start ``profstore serve`` on a free port; returns the process and its URL.

    The server's log goes to a file beside the database and its stdout is drained after
    the first line: an unread pipe fills up with per-request log lines and then blocks
    the server mid-response (a page that never loads)."""
    log = (db.parent / "serve.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "profstore", "serve", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE, stderr=log, text=True)
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(process.stdout.readline()),
                              daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    line = first[0] if first else ""
    if " at http://" not in line:
        process.kill()
        process.wait(timeout=10)
        log.close()
        err = (db.parent / "serve.log").read_text()
        raise AssertionError(f"profstore serve did not start: {line!r} {err[-2000:]}")
    threading.Thread(target=process.stdout.read, daemon=True).start()
    return process, line.rsplit(" at ", 1)[1].strip()


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("web-data")
    version_dir = write_fixture(root)
    db = ingest_into(tmp_path_factory.mktemp("web-db") / "fixture.db", root)
    process, url = start_server(db)
    try:
        yield Served(url, db.stem, db, version_dir)
    finally:
        stop_server(process)


@pytest.fixture(scope="package")
def screenshots() -> Iterator[Path]:
    """$PROFSTORE_SCREENSHOTS, else a new temporary directory (outside pytest's rotation,
    so the pictures outlive the run for a person to look at)."""
    chosen = os.environ.get("PROFSTORE_SCREENSHOTS")
    folder = Path(chosen) if chosen else Path(tempfile.mkdtemp(prefix="profstore-web-"))
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    print(f"\nweb view screenshots: {folder}")


@pytest.fixture(scope="package")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    require(importlib.util.find_spec("selenium") is not None,
            "the selenium client (pip install -e '.[test]')")
    for binary in (CHROMIUM, CHROMEDRIVER):
        require(binary.exists(), f"{binary} (bash .ci/browser.sh installs Debian's chromium "
                                 "and chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    profile = tmp_path_factory.mktemp("chromium-profile")
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = str(CHROMIUM)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)),
                              options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
