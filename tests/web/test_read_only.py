"""Writing through the web view must fail and leave the database file byte-identical:
Datasette refuses statements that are not queries, and the file is opened immutable (no
connection of the server can write it)."""

from __future__ import annotations

import hashlib
import urllib.parse

import pytest

pytestmark = pytest.mark.sqlite_only


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_writes_through_the_web_view_change_nothing(browser, served, screenshots, tmp_path):
    before = digest(served.path)
    attached, copied = tmp_path / "attached.db", tmp_path / "copy.db"
    refused = "Statement must be a SELECT"
    attempts = [
        ("insert into profile_set (alias) values ('intruder')", refused),
        ("delete from sample", refused),
        ("update sample set latency_us = 0", refused),
        ("drop table rejected_row", refused),
        ("create table scratch (x)", refused),
        (f"attach database '{attached}' as evil", refused),
        (f"vacuum into '{copied}'", refused),
        ("pragma journal_mode=delete", refused),
        # A WITH statement passes Datasette's check; the immutable file refuses the write.
        ("with doomed as (select id from sample) delete from sample where id in doomed",
         "attempt to write a readonly database"),
        (f"select 1; attach database '{attached}' as evil",
         "You can only execute one statement at a time"),
    ]
    for number, (sql, message) in enumerate(attempts):
        browser.get(f"{served.url}{served.database}?sql={urllib.parse.quote(sql)}")
        browser.save_screenshot(str(screenshots / f"write_attempt_{number}.png"))
        shown = browser.find_element("css selector", "section.content").text
        assert message in shown, sql
        assert not browser.find_elements("css selector", "table.rows-and-columns"), sql
    assert digest(served.path) == before
    assert not attached.exists() and not copied.exists()
    browser.get(f"{served.url}{served.database}?sql="
                + urllib.parse.quote("select count(*) as n from profile_set where alias = "
                                     "'intruder'"))
    assert browser.find_element("css selector", "td.col-n").text == "0"
