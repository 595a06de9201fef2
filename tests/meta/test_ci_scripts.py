"""Issue #24 item 7: CI sets ``CI=true`` itself, stops every server it starts, fails when the
PostgreSQL pass did not run, and one function (``in_ci``) reads ``CI`` everywhere."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.pgcluster import server_bindir

pytestmark = pytest.mark.no_database
PROBE = ('echo "CI=$CI"; echo "data=$PROFSTORE_PG_DATA"; '
         'echo "url=$PROFSTORE_TEST_PG_URL"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def with_postgres(tmp_path: Path, command: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if k not in ("CI", "PROFSTORE_SKIP_POSTGRES", "PROFSTORE_TEST_PG_URL")}
    base.update(PROFSTORE_PG_ENV=str(tmp_path / "pg.env"), PROFSTORE_PG_PORT=str(free_port()),
                TMPDIR=str(tmp_path), **env)
    return subprocess.run(["bash", str(REPO / ".ci" / "with-postgres"), "sh", "-c", command],
                          env=base, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture()
def server_binaries() -> None:
    if server_bindir() is None:
        pytest.skip("the PostgreSQL server binaries are not installed")


def test_a_run_without_the_postgresql_pass_fails_and_stops_its_server(tmp_path,
                                                                      server_binaries):
    done = with_postgres(tmp_path, PROBE)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CI=true" in done.stdout
    assert "ci: the PostgreSQL pass did not run" in done.stderr
    data = re.search(r"data=(\S+)", done.stdout)
    port = re.search(r"url=\S+:(\d+)/", done.stdout)
    assert data and port
    assert not Path(data.group(1)).exists()
    assert not listening(int(port.group(1)))
    assert not (tmp_path / "pg.env").exists()


def test_a_run_whose_postgresql_pass_ran_succeeds(tmp_path, server_binaries):
    done = with_postgres(tmp_path, 'echo \'<testsuite tests="3">\' > "$PROFSTORE_PG_REPORT"')
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ci: the PostgreSQL pass ran 3 tests" in done.stdout


@pytest.mark.parametrize("script", ["run", "with-postgres"])
def test_skipping_postgresql_is_refused_in_ci(tmp_path, script):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PROFSTORE_SKIP_POSTGRES="1", PROFSTORE_PG_ENV=str(tmp_path / "pg.env"))
    done = subprocess.run(["bash", str(REPO / ".ci" / script), "true"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert done.stderr == ("ci: PROFSTORE_SKIP_POSTGRES=1 is not allowed in CI: the PostgreSQL "
                           "pass must run\n")
    assert not (tmp_path / "pg.env").exists()


def test_ci_is_read_by_one_function():
    readers = []
    for path in [*REPO.glob("tests/**/*.py"), *REPO.glob("store/**/*.py"),
                 *REPO.glob("bench/*.py")]:
        text = path.read_text(encoding="utf-8")
        if re.search(r"""environ(\.get)?\(?\[?["']CI["']|getenv\(["']CI["']""", text):
            readers.append(str(path.relative_to(REPO)))
    assert readers == ["tests/support/prerequisites.py"]


def test_the_classification_check_fails_in_ci_when_it_cannot_check():
    env = {**os.environ, "CI": "True"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/upstream/classification.txt::test_classification_is_current"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (1, 4), done.stdout
    assert "CI=true and" in done.stdout + done.stderr or "UsageError" in done.stderr
