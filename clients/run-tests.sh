#!/usr/bin/env bash
# The client packages' tests (clients/js is @atrium/client, clients/react is @atrium/react):
#   unit         node --test clients/js/test (no server)
#   integration  @atrium/client against a spawned atrium-node: convergence across a kill -9,
#                offline edits across a reload, app token refresh, every documented message
#   react        the hooks rendered in headless Chromium against a spawned atrium-node
#   example      examples/react-canvas run as a person runs it, two people in Chromium
#   pack         npm pack of both, contents checked, a consumer project type-checked (tsc)
# Types are checked by tsc first, whatever is asked. Installs what is missing: Node.js and
# Chromium from Debian, the npm packages with `npm ci` from the committed lock files.
#
#   clients/run-tests.sh [all|unit|integration|react|example|pack]
#
# ATRIUM_NODE_BIN: the node binary to test against (default: target/debug/atrium-node, built
# when missing). CHROMIUM: the browser (default /usr/bin/chromium).
set -euo pipefail
cd "$(dirname "$0")"
CLIENTS="$(pwd)"
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
# Node 22+ has a global WebSocket; Node 20 needs the flag (the package takes a class otherwise).
WSFLAG=""
if [ "$(node -p 'Number(process.versions.node.split(".")[0])')" -lt 22 ]; then WSFLAG=--experimental-websocket; fi

want() { [ "$what" = all ] || [ "$what" = "$1" ]; }

echo "== npm ci (clients/js, clients/react)"
(cd js && npm ci --no-audit --no-fund --loglevel=error)
(cd react && npm ci --no-audit --no-fund --loglevel=error)
echo "== types: tsc --noEmit (the packages, the messages test); the committed .d.ts files are what tsc emits"
(cd js && npm run --silent typecheck && npm run --silent check:types)
(cd react && npm run --silent typecheck && npm run --silent check:types)

if want unit; then
  echo "== unit tests (node --test clients/js/test)"
  (cd js && node --test test/*.test.mjs)
fi

if want integration || want react || want example; then
  if [ -z "${ATRIUM_NODE_BIN:-}" ]; then
    echo "== building atrium-node"
    (cd "$ROOT" && cargo build -q --locked -p atrium-node)
    export ATRIUM_NODE_BIN="$ROOT/target/debug/atrium-node"
  fi
fi

if want integration; then
  echo "== integration: @atrium/client against a spawned atrium-node"
  (cd js && node $WSFLAG --test --test-concurrency=1 test/integration/*.test.mjs)
fi

if want react || want example; then
  if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    echo "== installing Chromium (Debian)"
    apt_install chromium
  fi
fi
if want react; then
  echo "== @atrium/react in headless Chromium against a spawned atrium-node"
  (cd react && node $WSFLAG --test test/render.test.mjs)
fi
if want example; then
  echo "== examples/react-canvas: npm ci, then two people in headless Chromium"
  (cd ../examples/react-canvas && npm ci --no-audit --no-fund --loglevel=error)
  (cd react && node --test test/example.test.mjs)
fi

if want pack; then
  echo "== npm pack, contents, and a consumer project type-checked against the tarballs"
  node "$CLIENTS/pack-check.mjs"
fi
echo "== client packages: ok"
