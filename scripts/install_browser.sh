#!/usr/bin/env bash
# Install the browser the admin's browser test drives: Debian's `chromium` package.
#
# The test (tests/admin/test_browser.py) launches /usr/bin/chromium through Playwright for
# Python with `executable_path`; Playwright's own browser download (`playwright install`) is
# never used, because it fetches a prebuilt build from outside the package registries.
#
#   scripts/install_browser.sh          # installs chromium when missing and we are root
#
# Exits 0 when chromium is present afterwards, or when it is missing and we cannot install it
# (not root): the browser test then skips and says why. Exits non-zero only when an install was
# attempted and failed.
set -euo pipefail

CHROMIUM=${DURABLE_CHROMIUM:-/usr/bin/chromium}

if [ -x "$CHROMIUM" ]; then
    echo "install_browser: $CHROMIUM is present ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))" >&2
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install_browser: $CHROMIUM is missing and we are not root: install Debian's" \
         "'chromium' package (apt-get install chromium); the browser test will skip" >&2
    exit 0
fi

echo "install_browser: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y chromium
"$CHROMIUM" --version >&2
