#!/usr/bin/env bash
# Fuzzes atrium-node's decoders with cargo-fuzz (libFuzzer), each target for a
# bounded time. Needs a nightly toolchain; installs cargo-fuzz when missing.
#
#   scripts/fuzz.sh                      # every target, FUZZ_SECONDS (60) each
#   FUZZ_SECONDS=1800 scripts/fuzz.sh    # longer, by hand
#   scripts/fuzz.sh ws_reader            # one target
#   FUZZ_KEEP=1 scripts/fuzz.sh          # merge new interesting inputs into the corpus in git
#   FUZZ_REPLAY=1 scripts/fuzz.sh        # only replay the kept corpus (a quick regression check)
#
# Targets (node/fuzz/fuzz_targets): parse_message (protocol::parse),
# apply_patch (doc::parse_ops + Document::apply), ws_reader (ws::Reader over
# arbitrary bytes). The corpus is node/fuzz/corpus/<target>/. Runs stop at the
# first crash, panic, leak, or allocation over FUZZ_MALLOC_MB (a failure of this
# script); the input that did it is left under node/fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/../node"

seconds="${FUZZ_SECONDS:-60}"
malloc_mb="${FUZZ_MALLOC_MB:-256}"
rss_mb="${FUZZ_RSS_MB:-2048}"
sanitizer="${FUZZ_SANITIZER:-address}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(parse_message apply_patch ws_reader)
fi

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz.sh: cargo-fuzz needs a nightly toolchain: rustup toolchain install nightly" >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "==> installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# libFuzzer writes what it finds into the first corpus folder: a scratch one,
# so a CI run leaves the corpus in git as it was (FUZZ_KEEP=1 merges it back).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

for t in "${targets[@]}"; do
    kept="fuzz/corpus/$t"
    mkdir -p "$kept" "$scratch/$t"
    # Inputs that once found a bug (fuzz/regressions/<target>-*) run every time.
    for found in fuzz/regressions/"$t"-*; do
        [ -f "$found" ] && cp "$found" "$scratch/$t/"
    done
    flags=(-rss_limit_mb="$rss_mb" -malloc_limit_mb="$malloc_mb" -max_len=1100000 -timeout=10)
    if [ "${FUZZ_REPLAY:-0}" = 1 ]; then
        echo "==> $t: replaying $(ls "$kept" | wc -l) kept inputs"
        cargo +nightly fuzz run -s "$sanitizer" "$t" "$kept" "$scratch/$t" -- "${flags[@]}" -runs=0
        continue
    fi
    echo "==> $t: fuzzing for ${seconds}s from $(ls "$kept" | wc -l) kept inputs"
    cargo +nightly fuzz run -s "$sanitizer" "$t" "$scratch/$t" "$kept" -- \
        "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1
    if [ "${FUZZ_KEEP:-0}" = 1 ]; then
        echo "==> $t: merging new inputs into $kept"
        cargo +nightly fuzz run -s "$sanitizer" "$t" "$kept" "$scratch/$t" -- \
            "${flags[@]}" -merge=1
    fi
done
echo "==> fuzzing done: no crash in ${targets[*]}"
