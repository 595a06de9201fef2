"""Start-up stays light: ``import profstore.api``, ``from profstore import Store`` and every
``--help`` load no database, numeric or YAML library, and ``--help`` no verb implementation.

Each check runs in a fresh interpreter and reads its ``sys.modules``; the time itself is
measured by ``python -m bench`` (``startup``), never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from profstore.cli.main import build_parser
from profstore.cli.reference import verbs

HEAVY = ("numpy", "scipy", "sqlalchemy", "alembic", "matplotlib", "yaml", "tqdm",
         "psycopg", "datasette", "importlib.metadata")
"""Imported when a Store opens, a lookup interpolates, a mapping file is read, a bar is
drawn or the version is printed; never by an import of the library or by ``--help``."""

HELP_MODULES = {"profstore", "profstore.cli", "profstore.cli.main", "profstore.cli.common",
                "profstore.cli.reference", "profstore.storage", "profstore.storage.sql_door",
                "profstore.cli.verbs",
                "profstore.cli.tensorcast_verbs"}
"""All of profstore that the parsers need."""

RMS = "tensor_cast.rms_norm.default"


def modules_after(code: str, *argv: str) -> list[str]:
    """The modules loaded once ``code`` ran in a fresh ``python -P`` (stdout kept apart)."""
    probe = ("import contextlib, io, json, sys\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             + "".join(f"    {line}\n" for line in code.splitlines())
             + "print(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-P", "-c", probe, *argv], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def heavy_in(modules: list[str]) -> list[str]:
    """The names of ``HEAVY`` that are loaded (themselves or a submodule)."""
    return [h for h in HEAVY if any(m == h or m.startswith(f"{h}.") for m in modules)]


@pytest.mark.no_database
@pytest.mark.parametrize("code", ["import profstore.api", "from profstore import Store",
                                  "import profstore.cli.lookup_cmd"])
def test_importing_the_library_loads_no_heavy_module(code):
    assert heavy_in(modules_after(code)) == []


@pytest.mark.no_database
def test_help_of_every_verb_loads_only_the_parsers():
    paths = [path for path, _ in verbs(build_parser())]
    code = ("from profstore.cli.main import main\n"
            "codes = [main([*path.split(), '--help']) for path in [''] + sys.argv[1:]]\n"
            "assert codes == [0] * len(codes), codes")
    loaded = modules_after(code, *paths)
    assert heavy_in(loaded) == []
    assert {m for m in loaded if m.split(".")[0] == "profstore"} == HELP_MODULES


@pytest.mark.no_database
def test_a_usage_error_loads_only_the_parsers():
    loaded = modules_after("from profstore.cli.main import main\n"
                           "import contextlib\n"
                           "with contextlib.redirect_stderr(io.StringIO()):\n"
                           "    assert main(['lookup', '--version']) == 2")
    assert {m for m in loaded if m.split(".")[0] == "profstore"} == HELP_MODULES


def test_the_engine_side_is_imported_when_a_store_looks_up(fixture_db):
    """The probe sees deferred imports: opening a Store and one 1-D lookup bring SQLAlchemy
    and numpy in, and the answer is the fixture's (8 → 10.0, 16 → 14.0: 12 tokens is
    12.0 on the line between them), so deferring the imports changed nothing."""
    leaf = {"op": RMS, "args": [{"shape": [12, 7168], "dtype": "bfloat16"},
                                {"shape": [7168], "dtype": "bfloat16"}, 1e-6],
            "outputs": [{"shape": [12, 7168], "dtype": "bfloat16"}]}
    code = ("from profstore import LeafOp, Store\n"
            "with Store.open(sys.argv[1]) as store:\n"
            "    found = store.lookup(LeafOp.from_json(json.loads(sys.argv[2])), 'v0.18')\n"
            "assert (found.latency_us, found.details['method']) == (12.0, 'linear_1d'), found")
    loaded = modules_after(code, fixture_db, json.dumps(leaf))
    assert {"numpy", "sqlalchemy"} <= set(loaded)
    assert not {"alembic", "yaml", "matplotlib", "scipy"} & set(loaded)
