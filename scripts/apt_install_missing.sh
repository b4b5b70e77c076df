#!/usr/bin/env bash
# Install the Debian packages named on the command line that are missing, when run as root on a
# machine with apt-get (CI, a fresh container); otherwise say what is missing and carry on.
# Used by the Makefile (libsleef-dev: SLEEF vector math for the CPU backend) and by
# scripts/run_tests.sh (chromium, postgresql, libsleef-dev for the tests). Never fails the caller.
set -uo pipefail
missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages: ${missing[*]}..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
    || echo "warning: could not install ${missing[*]} (tests that need them are skipped)"
else
  echo "note: Debian packages not installed: ${missing[*]} (as root: apt-get install ${missing[*]})"
fi
exit 0
