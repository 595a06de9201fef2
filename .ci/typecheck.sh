#!/usr/bin/env bash
# mypy over the installed package: setuptools package-dir maps store/ -> profstore,
# ingest/ -> profstore.ingest, migrations/ -> profstore.migrations, which mypy cannot follow
# in the source tree, so the package is copied (--no-deps --target) into a temporary
# directory and checked there with the repo's [tool.mypy] config.
# Usage: .ci/typecheck.sh [python]   (default: $PROFSTORE_VENV/bin/python or .venv/bin/python)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="${1:-$REPO/${PROFSTORE_VENV:-.venv}/bin/python}"
PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"  # absolute: the check runs elsewhere
TARGET="$(mktemp -d "${TMPDIR:-/tmp}/profstore-typecheck.XXXXXX")"
trap 'rm -rf "$TARGET"' EXIT
"$PY" -m pip install --quiet --no-deps --target "$TARGET/site" "$REPO"
cd "$TARGET/site"
"$PY" -m mypy --config-file "$REPO/pyproject.toml" --cache-dir "$REPO/.mypy_cache" -p profstore
