#!/usr/bin/env bash
# The test command (README: `make test`). Installs what the tests need that pip cannot
# (Debian's chromium for the report rendering test, Debian's PostgreSQL for the lake's
# ducklake:postgres: catalog tests), then runs pytest on the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's ${missing[*]} for the tests..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
      || echo "warning: ${missing[*]} could not be installed; the tests that need them will be skipped"
  fi
fi
export PATH="$PWD/.venv/bin:$PATH"
set +e
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" = "5" ]; then echo "no tests collected"; exit 1; fi
exit "$rc"
