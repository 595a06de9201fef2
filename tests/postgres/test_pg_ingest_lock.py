"""Issue #24 items 4 and 6 (ingest): two ingests into a fresh database, a lock held across a
server idle timeout, and the waiting message for a holder of another role."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from profstore.ingest.lock import IngestBusy, ingest_lock
from profstore.storage.engines import make_engine
from sqlalchemy.engine import make_url

from tests.support import perfdb
from tests.support.paths import REPO
from tests.support.postgres import execute

pytestmark = pytest.mark.postgresql_only


def admin() -> str:
    return perfdb.BACKEND.admin_url or ""


def test_two_ingests_into_a_fresh_database_both_succeed(rms_data):
    url = perfdb.new_empty_database()
    command = [sys.executable, "-m", "profstore", "ingest", str(rms_data), "--db", url]
    runs = [subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    done = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in runs]
    assert [code for code, _ in done] == [0, 0], done
    rows = execute(url, "SELECT alias, count(*) FROM profile_set GROUP BY alias")
    assert [tuple(r) for r in rows] == [("v0.18", 1)]


def test_the_lock_outlives_an_idle_session_timeout(rms_data):
    url = perfdb.new_database(rms_data.parent)
    name = make_url(url).database
    execute(admin(), f"ALTER DATABASE \"{name}\" SET idle_session_timeout = '1s'")
    first, second = make_engine(url), make_engine(url)
    try:
        with ingest_lock(first):
            time.sleep(2.5)  # the lock's session idles past the server's timeout
            busy = pytest.raises(IngestBusy, match="another ingest holds the database since")
            with busy, ingest_lock(second, wait=False):
                pass
    finally:
        first.dispose()
        second.dispose()


def test_a_holder_of_another_role_still_gives_the_waiting_message(rms_data):
    url = perfdb.new_database(rms_data.parent)
    role = f"profstore_other_{uuid.uuid4().hex[:8]}"
    execute(admin(), f"CREATE ROLE {role} LOGIN")
    other = make_engine(make_url(url).set(username=role, password=None)
                        .render_as_string(hide_password=False))
    holder = make_engine(url)
    try:
        with ingest_lock(holder), pytest.raises(IngestBusy) as raised, \
                ingest_lock(other, wait=False):
            pass
        assert str(raised.value).startswith(
            "another ingest holds the database since an unknown time (server pid ")
        assert str(raised.value).endswith(", another role's session)")
    finally:
        other.dispose()
        holder.dispose()
        perfdb.drop_databases([make_url(url).database or ""])
        execute(admin(), f"DROP ROLE {role}")
