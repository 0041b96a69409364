#!/usr/bin/env bash
# Install Debian's Chromium and its WebDriver for the browser tests (tests/web/test_web_browser.py),
# which drive a real headless Chromium through Selenium. Nothing is downloaded by the tests
# themselves: they use /usr/bin/chromium and /usr/bin/chromedriver, and skip (saying why) when
# those are missing. Idempotent: does nothing when both are already installed.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "note: chromium/chromedriver are not installed and this is not root; the browser tests will skip." >&2
  echo "      install them with: sudo apt-get install -y --no-install-recommends chromium chromium-driver" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: no apt-get here; install Chromium and its chromedriver to run the browser tests" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends chromium chromium-driver; then
  apt-get update || true
  apt-get install -y --no-install-recommends chromium chromium-driver || {
    echo "note: chromium could not be installed; the browser tests will skip" >&2
    exit 0
  }
fi
