#!/usr/bin/env bash
# Install the browser the admin's browser test drives: Debian's `chromium` package.
#
# The test (tests/admin/test_browser.py) launches /usr/bin/chromium (or $DURABLE_CHROMIUM)
# through Playwright for Python with `executable_path`; Playwright's own browser download
# (`playwright install`) is never used, because it fetches a prebuilt build from outside the
# package registries.
#
#   scripts/install_browser.sh      # `make browser`; .ci/run calls it before `make test`
#
# `make test` never calls this: it must work without root and without apt. Where no Chromium is
# present the browser test reports itself skipped with one line saying how to enable it; .ci/run
# sets DURABLE_REQUIRE_BROWSER=1, which turns that skip into a failure.
#
# Exits 0 when chromium is present afterwards. Exits non-zero when it is missing and cannot be
# installed here (not root, or no apt-get), or when the install failed.
set -euo pipefail

CHROMIUM=${DURABLE_CHROMIUM:-/usr/bin/chromium}

if [ -x "$CHROMIUM" ]; then
    echo "install_browser: $CHROMIUM is present ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))" >&2
    exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "install_browser: $CHROMIUM is missing and this is not a root shell with apt-get:" \
         "install a Chromium yourself and set DURABLE_CHROMIUM=/path/to/chromium" >&2
    exit 1
fi

echo "install_browser: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt or dpkg run to release its lock instead of failing at once.
apt-get -o DPkg::Lock::Timeout=300 update
apt-get -o DPkg::Lock::Timeout=300 install -y chromium
"$CHROMIUM" --version >&2
