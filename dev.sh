#!/usr/bin/env bash
# One entry point for a newcomer:
#   ./dev.sh demo    set up a virtualenv, generate the demo profiling data, ingest it, inspect, look up
#   ./dev.sh test    set up the virtualenv, type-check the checkout (.ci/typecheck.sh) and run
#                    the whole test suite on SQLite (tests/meta/test_layering.py runs
#                    lint-imports on the layering contract in pyproject.toml); when
#                    PROFSTORE_TEST_PG_URL is set (.ci/run sets it), run the database-backed
#                    folders again on PostgreSQL (--backend postgresql; unit tests and the
#                    pure parser fuzzers are backend-independent and run once; the JUnit
#                    report of that pass goes to $PROFSTORE_PG_REPORT when set: .ci/with-postgres
#                    fails a run without one)
#   ./dev.sh bench   set up and run the benchmarks on ../shared/perfdb
#   ./dev.sh docs    set up and build the documentation site into site/ (mkdocs build --strict;
#                    the test suite builds it too: tests/meta/test_api_reference.py)
# The tests run on pytest-xdist workers, one per core ($PROFSTORE_TEST_WORKERS overrides:
# a number, or 0 for one process), each a pytest session of its own (its tmp folders,
# session fixtures, $XDG_CACHE_HOME); --dist loadfile keeps a test file on one worker, so a
# module-scoped fixture (a TensorCast search, the wheel build) is built once
# (docs/adr/0116-parallel-test-suite.md).
set -euo pipefail
cd "$(dirname "$0")"
VENV="${PROFSTORE_VENV:-.venv}"
PARALLEL=(-n "${PROFSTORE_TEST_WORKERS:-auto}" --dist loadfile)
PG_TESTS=(tests/corpus tests/paths tests/lookup tests/storage/test_queries.py tests/storage/test_generations.py
          tests/storage/test_engines.py tests/storage/test_pinned.py
          tests/storage/test_packed_json.py tests/storage/test_catalog.py tests/storage/test_accounting.py
          tests/storage/test_points.py tests/storage/test_comm_samples.py
          tests/storage/test_provenance.py tests/storage/test_views.py tests/storage/test_sql_door.py
          tests/model/test_exact_keys.py
          tests/cli tests/evaluation tests/tensorcast tests/ingest tests/robustness tests/postgres tests/conformance
          tests/migrations)

# What each job installs: the demo needs the library alone; the tests and the bench need
# every extra (PostgreSQL driver, plots, the web view, torch and TensorCast's packages).
setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  # strict editable mode: a link tree of the checkout under build/, which mypy and
  # import-linter read like any installed package (docs/adr/0097-strict-editable-install.md)
  "$VENV/bin/python" -m pip install --quiet -e "${1:-.[test,report,postgres,web,tensorcast,docs]}" \
    --config-settings editable_mode=strict
}

case "${1:-}" in
  demo)
    setup .
    "$VENV/bin/profstore" demo --dir "${2:-demo}" ;;
  test)
    setup
    shift
    bash .ci/typecheck.sh "$VENV/bin/python"
    "$VENV/bin/python" -m pytest -q "${PARALLEL[@]}" "$@"
    if [ "$#" -eq 0 ]; then
      echo "== benchmark smoke runs (-m bench) =="
      "$VENV/bin/python" -m pytest -q "${PARALLEL[@]}" -m bench
    fi
    if [ -n "${PROFSTORE_TEST_PG_URL:-}" ]; then
      echo "== again on PostgreSQL (--backend postgresql) =="
      report=()
      if [ -n "${PROFSTORE_PG_REPORT:-}" ]; then report=(--junitxml "$PROFSTORE_PG_REPORT"); fi
      if [ "$#" -gt 0 ]; then
        "$VENV/bin/python" -m pytest -q "${PARALLEL[@]}" --backend postgresql "${report[@]}" "$@"
      else
        "$VENV/bin/python" -m pytest -q "${PARALLEL[@]}" --backend postgresql "${report[@]}" \
          "${PG_TESTS[@]}"
      fi
    fi ;;
  docs)
    setup ".[docs]"
    "$VENV/bin/python" -m mkdocs build --strict ;;
  bench)
    setup
    "$VENV/bin/python" -m bench --root "${2:-../shared/perfdb}" ;;
  *)
    echo "usage: ./dev.sh demo|test|bench|docs" >&2
    exit 2 ;;
esac
