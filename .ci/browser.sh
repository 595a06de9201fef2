#!/usr/bin/env bash
# The real browser of the web-view tests (tests/web): Debian's chromium and its
# chromedriver. Skipped when already installed; selenium itself comes from the test extra.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
start=$(date +%s)
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  chromium chromium-driver > /dev/null
echo "browser: chromium and chromium-driver installed in $(( $(date +%s) - start ))s"
