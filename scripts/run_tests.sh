#!/usr/bin/env bash
# The test command (README: `make test`). Installs what the tests need that pip cannot
# (Debian's chromium for the report rendering test), then runs pytest on the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the report rendering test..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "warning: chromium could not be installed; the rendering test will be skipped"
  fi
fi
export PATH="$PWD/.venv/bin:$PATH"
set +e
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" = "5" ]; then echo "no tests collected"; exit 1; fi
exit "$rc"
