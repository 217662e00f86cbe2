#!/usr/bin/env bash
# The browser client's tests: the unit tests of the page's own modules (web/test) and of its
# connection logic, which is the client package (clients/js/test), with Node's test runner;
# then the end-to-end tests (the real atrium-node, the page in headless Chromium: a file's
# first open, two windows, the history panel). Installs what is missing: Node.js and
# Chromium from Debian, playwright-core from npm (web/package-lock.json).
# Needs only the package registries, nothing else from the internet.
#
#   web/run-tests.sh            # both
#   web/run-tests.sh unit       # unit tests only (clients/js/test; clients/run-tests.sh runs the rest)
#   web/run-tests.sh e2e        # end-to-end only
set -euo pipefail
cd "$(dirname "$0")"
WEB="$(pwd)"
ROOT="$(cd .. && pwd)"
what="${1:-all}"

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "== installing Node.js (Debian)"
  apt_install nodejs npm
fi

if [ "$what" = all ] || [ "$what" = unit ]; then
  echo "== unit tests (node --test web/test/ clients/js/test/)"
  node --test test/*.test.mjs "$ROOT"/clients/js/test/*.test.mjs
fi

if [ "$what" = all ] || [ "$what" = e2e ]; then
  if [ ! -d node_modules/playwright-core ]; then
    echo "== installing playwright-core (npm)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
  if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    echo "== installing Chromium (Debian)"
    apt_install chromium
  fi
  if [ -z "${ATRIUM_NODE_BIN:-}" ]; then
    echo "== building atrium-node"
    (cd "$ROOT" && cargo build -q --locked -p atrium-node)
  fi
  echo "== end-to-end (headless Chromium)"
  node e2e/first_open.mjs
  node e2e/two_windows.mjs
  echo "== end-to-end: version history (headless Chromium)"
  node e2e/history.mjs
  echo "artifacts: $WEB/artifacts/"
fi
