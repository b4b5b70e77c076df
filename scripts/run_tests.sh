#!/usr/bin/env bash
# The test command (README: `make test`). Installs what the tests need that pip cannot (Debian's
# chromium for the report rendering test, PostgreSQL for the lake's ducklake:postgres: catalog
# tests, libsleef-dev for the CPU backend's vector math), then runs pytest on the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libsleef-dev)
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || packages+=(postgresql)
bash scripts/apt_install_missing.sh "${packages[@]}"
export PATH="$PWD/.venv/bin:$PATH"
set +e
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" = "5" ]; then echo "no tests collected"; exit 1; fi
exit "$rc"
