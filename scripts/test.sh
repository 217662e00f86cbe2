#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, unit and whole-binary tests.
# Works on a fresh Debian machine with a Rust toolchain; it installs and starts on
# loopback whatever services the suite needs (see scripts/services.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install a Rust toolchain (https://rustup.rs) first" >&2
    exit 1
fi

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "services (Postgres, NATS with JetStream, Redis) on loopback"
scripts/services.sh start
# shellcheck disable=SC1091
source .services/env

step "cargo test"
cargo test --workspace --locked

step "browser client: unit tests and two windows in headless Chromium"
ATRIUM_NODE_BIN="$PWD/target/debug/atrium-node" E2E_PAGE_FROM_NODE=1 web/run-tests.sh

step "all tests passed"
