#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, unit and whole-binary tests.
# Works on a fresh Debian machine with a Rust toolchain; it installs and starts on
# loopback whatever services the suite needs (see scripts/services.sh).
#
#   scripts/test.sh          # the bounded suite, as CI runs it (well under an hour)
#   scripts/test.sh --long   # the same with the long modes: an hour of soak, 10 minutes of
#                            # fuzzing a target, 10,000 slowloris sockets, longer schemathesis
#                            # and faults under 500 sockets for a minute each (hours in all)
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
    "") ;;
    --long)
        export SOAK_SECONDS="${SOAK_SECONDS:-3600}" SOAK_PROFILE="${SOAK_PROFILE:-release}"
        export FUZZ_SECONDS="${FUZZ_SECONDS:-600}"
        export SCHEMATHESIS_EXAMPLES="${SCHEMATHESIS_EXAMPLES:-500}"
        export SCHEMATHESIS_MAX_TIME="${SCHEMATHESIS_MAX_TIME:-1200}"
        export ATRIUM_SLOWLORIS_SOCKETS="${ATRIUM_SLOWLORIS_SOCKETS:-10000}"
        export ATRIUM_SLOWLORIS_ROUNDS="${ATRIUM_SLOWLORIS_ROUNDS:-5}"
        export ATRIUM_FAULT_USERS="${ATRIUM_FAULT_USERS:-500}"
        export ATRIUM_FAULT_SECONDS="${ATRIUM_FAULT_SECONDS:-60}"
        ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
        ;;
    *)
        echo "usage: scripts/test.sh [--long]" >&2
        exit 2
        ;;
esac

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install a Rust toolchain (https://rustup.rs) first" >&2
    exit 1
fi

step() { printf '\n==> %s\n' "$*"; }

# pingora (the router) builds zlib-ng with cmake.
if ! command -v cmake >/dev/null 2>&1; then
    step "installing cmake (needed to build pingora)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q cmake >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -q cmake >/dev/null; }
fi

# The load tool's --profile test records with Linux perf.
if ! command -v perf >/dev/null 2>&1; then
    step "installing linux-perf (the load tool's --profile test records with it)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-perf >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-perf >/dev/null; }
fi

# The fault suite's clock jump preloads libfaketime into the nodes.
if ! ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1; then
    step "installing libfaketime (the fault suite's clock jump)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libfaketime >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -q libfaketime >/dev/null; }
fi

# The fault suite's link faults drop packets with nftables rules and delay them through an
# iptables NFQUEUE rule (loadtest/src/cluster/links.rs).
for tool in nft:nftables iptables:iptables; do
    if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
        step "installing ${tool#*:} (the fault suite's link faults)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${tool#*:}" >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${tool#*:}" >/dev/null; }
    fi
done

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "services (Postgres, NATS with JetStream, Redis) on loopback"
scripts/services.sh start
# Stopped again at the end, unless asked to keep them (ATRIUM_KEEP_SERVICES=1).
if [ "${ATRIUM_KEEP_SERVICES:-0}" != 1 ]; then
    trap 'scripts/services.sh stop' EXIT
fi
# shellcheck disable=SC1091
source .services/env

step "cargo test"
cargo test --workspace --locked

step "HTTP API against docs/openapi.yaml: schemathesis on a live node (bounded)"
scripts/schemathesis.sh

step "soak: load in 3 phases, memory flat, rooms leave memory (scripts/soak.sh)"
SOAK_SECONDS="${SOAK_SECONDS:-120}" scripts/soak.sh

step "fuzzing: each decoder for a bounded time (scripts/fuzz.sh; longer by hand)"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}" FUZZ_SANITIZER="${FUZZ_SANITIZER:-none}" scripts/fuzz.sh

step "Kubernetes: the chart rendered, linted and validated; dashboards and alerts against a real Prometheus"
k8s/test.sh

step "browser client: unit tests and two windows in headless Chromium"
ATRIUM_NODE_BIN="$PWD/target/debug/atrium-node" E2E_PAGE_FROM_NODE=1 web/run-tests.sh

step "client packages: types, unit tests, against a real node, React in headless Chromium, npm pack"
ATRIUM_NODE_BIN="$PWD/target/debug/atrium-node" clients/run-tests.sh

step "all tests passed"
