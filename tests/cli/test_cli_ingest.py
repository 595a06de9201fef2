"""``profstore db upgrade`` and ``profstore ingest``, in process and as a subprocess."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from profstore.cli.main import main
from profstore.storage.engines import head_revision

from tests.support.cli_fixture import write_fixture
from tests.support.paths import REPO
from tests.support.perfdb import V18_DIR

SUMMARY = re.compile(
    r"v0\.18: 3 files, 12 rows read, 10 accepted, 2 rejected "
    r"\(column_count 1, latency_invalid 1\) in \d+\.\d\ds")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_db_upgrade_creates_then_reports_head(capsys, tmp_path):
    db = tmp_path / "sub" / "new.db"
    head = head_revision()
    code, out, err = run(capsys, "db", "upgrade", "--db", str(db))
    assert (code, err) == (0, "")
    assert out == f"sqlite:///{db}: upgraded from an empty database to revision {head}\n"
    code, out, _ = run(capsys, "db", "upgrade", "--db", str(db))
    assert (code, out) == (0, f"sqlite:///{db}: already at revision {head}\n")


def test_ingest_prints_one_summary_per_version(capsys, tmp_path):
    root = tmp_path / "data"
    write_fixture(root)
    db = str(tmp_path / "store.db")
    code, out, err = run(capsys, "ingest", str(root), "--db", db)
    assert (code, err) == (0, "")
    assert SUMMARY.fullmatch(out.strip())
    code, out, _ = run(capsys, "ingest", str(root), "--db", db)
    assert (code, out) == (0, f"v0.18: unchanged ({V18_DIR}), skipped\n")


def test_ingest_json(capsys, tmp_path):
    root = tmp_path / "data"
    write_fixture(root)
    code, out, _ = run(capsys, "ingest", str(root), "--db", str(tmp_path / "s.db"), "--json")
    [summary] = json.loads(out)
    assert code == 0
    assert summary.pop("seconds") >= 0
    assert summary == {"alias": "v0.18", "directory": V18_DIR, "status": "ingested",
                       "files": 3, "rows_read": 12, "rows_accepted": 10, "rows_rejected": 2,
                       "reasons": {"column_count": 1, "latency_invalid": 1},
                       "refused_files": [], "message": ""}


def test_ingest_progress_only_on_a_terminal(capsys, tmp_path, monkeypatch):
    root = tmp_path / "data"
    write_fixture(root)
    code, _, err = run(capsys, "ingest", str(root), "--db", str(tmp_path / "a.db"))
    assert (code, err) == (0, "")
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["ingest", str(root), "--db", str(tmp_path / "b.db")]) == 0
    drawn = terminal.getvalue()
    frames = [f for f in drawn.split("\r") if f.strip()]
    assert frames[-1].startswith("v0.18: 100%") and " 3/3 [" in frames[-1]
    assert "files/s]" in frames[-1] and drawn.endswith("\n") and drawn.count("\n") == 1


def test_ingest_missing_path(capsys, tmp_path):
    db = tmp_path / "x.db"
    code, out, err = run(capsys, "ingest", str(tmp_path / "absent"), "--db", str(db))
    assert (code, out) == (1, "")
    assert err == f"profstore: error: {tmp_path / 'absent'} does not exist\n"
    assert not db.exists()


def test_ingest_without_version_directories(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "ingest", str(tmp_path / "empty"), "--db",
                       str(tmp_path / "x.db"))
    assert code == 1
    assert err.startswith(f"profstore: error: no version directories under {tmp_path}")
    assert err.count("\n") == 1


def test_ingest_uses_the_environment_database(capsys, tmp_path, monkeypatch):
    root = tmp_path / "data"
    write_fixture(root)
    db = tmp_path / "env.db"
    monkeypatch.setenv("PROFSTORE_DB", str(db))
    assert run(capsys, "ingest", str(root))[0] == 0
    code, out, _ = run(capsys, "versions", "--json")
    assert (code, [v["alias"] for v in json.loads(out)]) == (0, ["v0.18"])
    assert db.is_file()


def test_passwords_never_printed(capsys):
    code, out, err = run(capsys, "versions", "--db",
                         "postgresql+psycopg://user:s3cret@127.0.0.1:1/none")
    assert code == 1
    assert "s3cret" not in out + err
    assert err.startswith("profstore: error: ")


def test_usage_error_exit_code(capsys):
    code, _, err = run(capsys, "kernels")
    assert code == 2
    assert "the following arguments are required: --version" in err


def cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "profstore.cli.main", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_subprocess_help_lists_every_verb():
    done = cli("--help")
    assert done.returncode == 0
    verbs = ["db", "ingest", "versions", "kernels", "regimes", "duplicates", "rejected", "sql",
             "lookup", "explain"]
    listed = [line.split()[0] for line in done.stdout.splitlines()
              if line.startswith("    ") and line.split()]
    assert [v for v in listed if v in verbs] == verbs


def test_subprocess_user_error_has_no_traceback(tmp_path: Path):
    done = cli("versions", "--db", str(tmp_path / "missing.db"))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (f"profstore: error: no database at {tmp_path / 'missing.db'}; "
                           f"run `profstore ingest PATH --db {tmp_path / 'missing.db'}` first\n")


def test_a_verb_without_db_creates_profstore_db_in_the_current_folder(capsys, tmp_path,
                                                                       monkeypatch):
    """The default database is the file ``profstore.db`` in the working folder (not a module
    name a rename could rewrite), and ``--help`` says so."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFSTORE_DB", raising=False)
    code, out, err = run(capsys, "db", "upgrade")
    assert (code, err) == (0, "")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["profstore.db"]
    assert out.startswith(f"sqlite:///{tmp_path / 'profstore.db'}: upgraded from an empty")
    help_text = subprocess.run(
        [sys.executable, "-m", "profstore", "ingest", "--help"], capture_output=True,
        text=True, check=True).stdout
    assert "else profstore.db)" in " ".join(help_text.split())


def test_alembic_ini_names_the_default_database():
    manual = (REPO / "alembic.ini").read_text().splitlines()[0]
    assert manual == "# Manual use: alembic -x db=sqlite:///profstore.db upgrade head"
