#!/usr/bin/env bash
# mypy over the checkout as it is: the package and the benchmarks in bench/. setuptools'
# package-dir maps store/ -> profstore, ingest/ -> profstore.ingest and migrations/ ->
# profstore.migrations, which mypy cannot follow from the source folders; ./dev.sh installs the package in strict editable mode, a
# tree of links to the checked-out files under build/ that the virtualenv's .pth puts on
# sys.path, and mypy reads the package there (an error's path is a link to the source file).
# Usage: .ci/typecheck.sh [python]   (default: $PROFSTORE_VENV/bin/python or .venv/bin/python)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="${1:-$REPO/${PROFSTORE_VENV:-.venv}/bin/python}"
cd "$REPO"
if ! "$PY" -c "import profstore, sys; sys.exit('__editable__' not in profstore.__file__)"; then
  echo "typecheck: profstore is not installed in strict editable mode (run ./dev.sh test)" >&2
  exit 1
fi
"$PY" -m mypy --config-file pyproject.toml -p profstore -p bench
