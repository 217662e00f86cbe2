#!/usr/bin/env bash
# Soak: steady load on one node for a while, with rooms coming and going, and proof that
# memory stays flat and that rooms leave memory once their people have gone.
#
#   scripts/soak.sh                                  # CI: 180 s, debug build
#   SOAK_SECONDS=3600 SOAK_PROFILE=release scripts/soak.sh   # by hand: an hour, release build
#
# Each phase's setup signs up 31 accounts; the node hashes passwords with a small Argon2 memory
# cost here (SOAK_ARGON2_MEMORY_KIB, 1 MiB), so what is measured is sockets and rooms, not the
# allocator's keeping of freed 19 MiB hashing buffers (see docs/reliability.md).
#
# How: one node is started here (loopback, scratch data folder, ATRIUM_ROOM_IDLE_MS short so
# empty rooms leave quickly, /health statistics on). The load tool (atrium-loadtest --url)
# then runs in 3 phases of SOAK_SECONDS/3 each, every phase with its own accounts and its own
# SOAK_FILES files (new rooms), SOAK_USERS sockets, editing and moving cursors. Between phases,
# and at the end, every socket has closed and the script waits for `atrium_rooms` to reach 0.
# The tool's --json report of each phase holds the node's resident memory every second;
# the phases' series are laid end to end, and:
#   - flat:   mean RSS over the last third of the run <= (1 + SOAK_FLAT_PCT/100) x the
#             mean over the middle third (the first third is the warm-up);
#   - per connection: (mean RSS in the last third - RSS before the first socket) / sockets
#             <= SOAK_KB_PER_CONN KiB;
#   - rooms:  `atrium_rooms` back to 0 within SOAK_ROOMS_GONE_S after each phase;
#   - nothing lost: every phase connected every socket, no dropped, out-of-order or unacked
#             patch, no unexpected close.
# Exits non-zero when any of these fails. The figures go to $SOAK_OUT/summary.json (default:
# a temporary folder, printed; removed on success unless SOAK_OUT is set).
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_SECONDS="${SOAK_SECONDS:-180}"
SOAK_PROFILE="${SOAK_PROFILE:-debug}"
SOAK_USERS="${SOAK_USERS:-300}"
SOAK_FILES="${SOAK_FILES:-30}"
SOAK_PRESENCE_RATE="${SOAK_PRESENCE_RATE:-5}"
SOAK_EDIT_RATE="${SOAK_EDIT_RATE:-2}"
SOAK_FLAT_PCT="${SOAK_FLAT_PCT:-15}"
SOAK_KB_PER_CONN="${SOAK_KB_PER_CONN:-256}"
SOAK_ROOM_IDLE_MS="${SOAK_ROOM_IDLE_MS:-2000}"
SOAK_ROOMS_GONE_S="${SOAK_ROOMS_GONE_S:-30}"
PHASES=3

log() { printf '[soak] %s\n' "$*" >&2; }

case "$SOAK_PROFILE" in
    debug) cargo_flags=() ;;
    release) cargo_flags=(--release) ;;
    *) log "SOAK_PROFILE is debug or release"; exit 2 ;;
esac
NODE_BIN="$PWD/target/$SOAK_PROFILE/atrium-node"
LOAD_BIN="$PWD/target/$SOAK_PROFILE/atrium-loadtest"
if [ ! -x "$NODE_BIN" ] || [ ! -x "$LOAD_BIN" ]; then
    log "building atrium-node and atrium-loadtest ($SOAK_PROFILE)"
    cargo build -q "${cargo_flags[@]}" -p atrium-node -p atrium-loadtest
fi

phase_s=$((SOAK_SECONDS / PHASES))
warmup=5
duration=$((phase_s - warmup))
if [ "$duration" -lt 10 ]; then
    log "SOAK_SECONDS must be at least $((PHASES * (warmup + 10)))"
    exit 2
fi

# The working directory is the checkout (see the cd above).
# shellcheck source=scripts/lib/node.sh
source scripts/lib/node.sh
scratch_node_folders soak "${SOAK_OUT:-}"

# The tool raises its own open-file limit; the node is started here, so raise it here too.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

scratch_node_start \
    ATRIUM_NODE_ID=soak \
    ATRIUM_HEALTH_STATS=1 \
    ATRIUM_ROOM_IDLE_MS="$SOAK_ROOM_IDLE_MS" \
    ATRIUM_WS_PER_IP=1000000 \
    ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND=0 \
    ATRIUM_WS_PER_ACCOUNT=1000 \
    ATRIUM_AUTH_PER_IP_PER_MINUTE=1000000 \
    ATRIUM_AUTH_PER_EMAIL_PER_MINUTE=1000000 \
    ATRIUM_FILES_PER_ACCOUNT=1000000 \
    ATRIUM_FILE_CREATES_PER_MINUTE=1000000 \
    ATRIUM_ARGON2_MEMORY_KIB="${SOAK_ARGON2_MEMORY_KIB:-1024}"
log "node ($SOAK_PROFILE) at $BASE, pid $NODE_PID; $PHASES phases of ${phase_s}s: $SOAK_USERS sockets over $SOAK_FILES new files each"

gauge() { curl -fsS -m 2 "$METRICS/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$NODE_PID/status"; }

# Waits for atrium_rooms (and atrium_connections) to reach 0; prints the seconds it took.
rooms_gone() {
    local start now rooms conns
    start=$(date +%s.%N)
    while :; do
        rooms=$(gauge atrium_rooms || echo x)
        conns=$(gauge atrium_connections || echo x)
        now=$(date +%s.%N)
        if [ "$rooms" = 0 ] && [ "$conns" = 0 ]; then
            python3 -c "print(round($now - $start, 2))"
            return 0
        fi
        if python3 -c "import sys; sys.exit(0 if $now - $start > $SOAK_ROOMS_GONE_S else 1)"; then
            log "rooms still in memory after ${SOAK_ROOMS_GONE_S}s: rooms=$rooms connections=$conns"
            echo -1
            return 1
        fi
        sleep 0.2
    done
}

failed=0
: >"$OUT/phases.tsv"
for phase in $(seq 1 "$PHASES"); do
    log "phase $phase/$PHASES: load for ${phase_s}s"
    if ! "$LOAD_BIN" --url "$BASE" --users "$SOAK_USERS" --files "$SOAK_FILES" \
        --accounts 30 --per-account 10 --presence-rate "$SOAK_PRESENCE_RATE" \
        --edit-rate "$SOAK_EDIT_RATE" --ramp 200 --warmup "$warmup" --duration "$duration" \
        --label "soak phase $phase" --json "$OUT/phase$phase.json" >"$OUT/phase$phase.txt" 2>&1; then
        log "phase $phase: the load tool failed; its output:"
        tail -n 30 "$OUT/phase$phase.txt" >&2
        failed=1
        break
    fi
    gone=$(rooms_gone) || failed=1
    printf '%s\t%s\t%s\n' "$phase" "$gone" "$(rss_kb)" >>"$OUT/phases.tsv"
    log "phase $phase done: rooms and sockets gone after ${gone}s, node RSS now $(($(rss_kb) / 1024)) MiB"
done

if [ "$failed" = 0 ]; then
    python3 - "$OUT" "$PHASES" "$SOAK_USERS" "$SOAK_FLAT_PCT" "$SOAK_KB_PER_CONN" \
        "$SOAK_SECONDS" "$SOAK_PROFILE" "$SOAK_FILES" "$SOAK_ROOMS_GONE_S" <<'PY' || failed=1
import json, sys, time
out, phases, users, flat_pct, kb_bound, seconds, profile, files, gone_bound = sys.argv[1:]
phases, users, flat_pct, kb_bound = int(phases), int(users), float(flat_pct), float(kb_bound)
reports = [json.load(open(f"{out}/phase{i}.json")) for i in range(1, phases + 1)]
gone = [float(l.split("\t")[1]) for l in open(f"{out}/phases.tsv")]

failures = []
series = []  # (phase, rss_mb) of every second with (nearly) every socket open
for i, r in enumerate(reports, 1):
    p = r["problems"]
    if r["connected"] != users:
        failures.append(f"phase {i}: {r['connected']} of {users} sockets connected")
    for k in ("dropped_patches", "out_of_order", "unacked_patches", "connection_errors"):
        if p[k]:
            failures.append(f"phase {i}: {k} = {p[k]}")
    if p["unexpected_closes"]:
        failures.append(f"phase {i}: unexpected closes {p['unexpected_closes']}")
    series += [(i, m["rss_mb"]) for m in r["memory"]
               if m.get("rss_mb") is not None and m["connections"] >= 0.95 * users]

n = len(series)
if n < 9:
    failures.append(f"only {n} memory samples under full load")
    middle = last = per_conn = ratio = None
else:
    third = n // 3
    mean = lambda xs: sum(v for _, v in xs) / len(xs)
    middle = mean(series[third:2 * third])
    last = mean(series[2 * third:])
    ratio = last / middle
    before = reports[0]["server"]["rss_before_mb"]
    per_conn = (last - before) * 1024 / users
    if ratio > 1 + flat_pct / 100:
        failures.append(f"memory grew: last third {last:.1f} MB vs middle third {middle:.1f} MB "
                        f"(x{ratio:.3f}, bound x{1 + flat_pct / 100:.2f})")
    if per_conn > kb_bound:
        failures.append(f"{per_conn:.0f} KiB per connection (bound {kb_bound:.0f})")
if any(g < 0 for g in gone):
    failures.append(f"rooms did not leave memory within {gone_bound} s after a phase: {gone}")

summary = {
    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    "profile": profile, "seconds": int(seconds), "phases": phases, "users": users,
    "files_per_phase": int(files),
    "rss_before_mb": reports[0]["server"]["rss_before_mb"],
    "rss_max_mb": max(r["server"]["max_rss_mb"] or 0 for r in reports),
    "rss_middle_third_mb": middle, "rss_last_third_mb": last, "last_over_middle": ratio,
    "kb_per_connection": per_conn, "samples": n,
    "rooms_gone_after_s": gone,
    "rss_idle_after_phase_mb": [round(float(l.split("\t")[2]) / 1024, 1) for l in open(f"{out}/phases.tsv")],
    "patch_relay_p99_ms": [r["patch_relay_ms"]["p99"] for r in reports],
    "acks_per_s": [r["rates"]["acks_received_per_s"] for r in reports],
    "messages_per_s": [r["rates"]["messages_sent_per_s"] + r["rates"]["messages_received_per_s"]
                       for r in reports],
    "failures": failures,
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
print(json.dumps(summary, indent=2))
sys.exit(1 if failures else 0)
PY
fi

if [ "$failed" != 0 ]; then
    log "FAILED"
    exit 1
fi
ok=1
log "passed"
