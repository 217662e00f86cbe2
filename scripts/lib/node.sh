# A scratch atrium-node for one script's run: its folders, its start, its address, its stop.
# Sourced by scripts/schemathesis.sh and scripts/soak.sh, which define `log` and `NODE_BIN`:
#
#   scratch_node_folders soak "${SOAK_OUT:-}"   # OUT (reports, node.log; kept on failure or when
#                                               # given) and DATA (removed); an EXIT trap stops
#                                               # the node and cleans up
#   scratch_node_start ATRIUM_X=1 ...           # starts "$NODE_BIN" with those settings on a port
#                                               # of its choosing; sets NODE_PID, BASE and
#                                               # METRICS (its admin address, where /metrics is)
#   ok=1                                        # at the end of a run that passed
#
# The node binds port 0 and prints the address it listens on: no race for a free port.

scratch_node_folders() {
    local name=$1
    NODE_OUT_GIVEN=$2
    OUT="${2:-$(mktemp -d "/tmp/atrium-$name.XXXXXX")}"
    mkdir -p "$OUT"
    DATA="$(mktemp -d "/tmp/atrium-$name-data.XXXXXX")"
    NODE_PID=""
    ok=0
    trap scratch_node_cleanup EXIT
}

scratch_node_cleanup() {
    if [ -n "$NODE_PID" ] && kill -0 "$NODE_PID" 2>/dev/null; then
        kill -TERM "$NODE_PID" 2>/dev/null || true
        for _ in $(seq 1 150); do kill -0 "$NODE_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NODE_PID" 2>/dev/null || true
    fi
    rm -rf "$DATA"
    if [ "$ok" = 1 ] && [ -z "$NODE_OUT_GIVEN" ]; then
        rm -rf "$OUT"
    else
        log "reports and the node's log are in $OUT"
    fi
}

scratch_node_start() {
    env ATRIUM_BIND=127.0.0.1:0 ATRIUM_ADMIN_BIND=127.0.0.1:0 ATRIUM_DATA="$DATA" \
        ATRIUM_LOG="${ATRIUM_LOG:-warn}" "$@" \
        "$NODE_BIN" >"$OUT/node.log" 2>&1 &
    NODE_PID=$!
    BASE=""
    local addr
    for _ in $(seq 1 200); do
        addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$OUT/node.log" | head -n 1 || true)
        if [ -n "$addr" ] && curl -fsS -m 1 "http://$addr/health" >/dev/null 2>&1; then
            BASE="http://$addr"
            # /metrics is on the admin address (on the main one it needs an admin's token).
            METRICS=$(grep -oE 'metrics on http://127\.0\.0\.1:[0-9]+' "$OUT/node.log" | head -n 1 \
                | sed 's/^metrics on //' || true)
            METRICS="${METRICS:-$BASE}"
            return 0
        fi
        kill -0 "$NODE_PID" 2>/dev/null || break
        sleep 0.1
    done
    log "the node did not start; its log:"
    cat "$OUT/node.log" >&2
    exit 1
}
