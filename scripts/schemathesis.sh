#!/usr/bin/env bash
# Keeps docs/openapi.yaml true: fuzzes a live node against it with schemathesis (PyPI).
#
#   scripts/schemathesis.sh            # bounded, as CI runs it (about 2.5 minutes)
#   SCHEMATHESIS_EXAMPLES=500 SCHEMATHESIS_MAX_TIME=1200 scripts/schemathesis.sh   # longer, by hand
#
# What it does:
#   1. installs schemathesis (pinned) into a venv under .services/schemathesis (once);
#   2. builds target/debug/atrium-node if it is missing, and starts it on a free loopback
#      port with a scratch data folder, sign-up/sign-in limits raised (so fuzzing is not
#      all 429) and cheap password hashing (so thousands of sign-ups finish in time);
#   3. signs up two real accounts: the first one's token is handed to schemathesis for
#      every operation whose security is `bearerAuth`; the second one's token is used only
#      by a separate, small run of `POST /api/signout` (which ends the session it is given);
#      a server admin makes an API key (scopes `server`, `revoke`) for every operation
#      whose security is `apiKeyAuth`;
#   4. runs `schemathesis run` with these checks: not_a_server_error (no 500),
#      status_code_conformance (every status documented), response_schema_conformance and
#      content_type_conformance, and response_headers_conformance (ETag, Cache-Control);
#      every phase (examples, coverage, fuzzing, stateful);
#   5. checks the WebSocket upgrade's HTTP answers (101, 400, 426) by hand: a 101 turns the
#      connection into a socket, which an HTTP fuzzer cannot read, so schemathesis skips
#      that one operation;
#   6. stops the node; exits non-zero on any failure.
# Loopback only. Reports (JUnit, NDJSON) and the node's log go to $SCHEMATHESIS_OUT
# (default: a temporary folder, printed; kept on failure).
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
TOOLS="$PWD/.services/schemathesis"
EXAMPLES="${SCHEMATHESIS_EXAMPLES:-40}"
MAX_TIME="${SCHEMATHESIS_MAX_TIME:-120}"
SEED="${SCHEMATHESIS_SEED:-}"
NODE_BIN="${ATRIUM_NODE_BIN:-$PWD/target/debug/atrium-node}"
SPEC="$PWD/docs/openapi.yaml"

log() { printf '[schemathesis] %s\n' "$*" >&2; }

# 1. schemathesis, pinned, in its own venv.
stamp="$TOOLS/venv/.installed-$SCHEMATHESIS_VERSION"
if [ ! -f "$stamp" ]; then
    log "installing schemathesis $SCHEMATHESIS_VERSION (PyPI) into $TOOLS/venv"
    rm -rf "$TOOLS/venv"
    mkdir -p "$TOOLS"
    python3 -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
    touch "$stamp"
fi
ST="$TOOLS/venv/bin/schemathesis"

# 2. The node.
if [ ! -x "$NODE_BIN" ]; then
    log "building atrium-node (debug)"
    cargo build -q -p atrium-node
fi

# The working directory is the checkout (see the cd above).
# shellcheck source=scripts/lib/node.sh
source scripts/lib/node.sh
scratch_node_folders schemathesis "${SCHEMATHESIS_OUT:-}"

scratch_node_start \
    ATRIUM_NODE_ID=schemathesis \
    ATRIUM_ADMINS=fuzz-admin@example.com \
    ATRIUM_SERVER_API_PER_SECOND=100000 \
    ATRIUM_REQUESTS_PER_IP_PER_SECOND=0 \
    ATRIUM_AUTH_PER_IP_PER_MINUTE=1000000 \
    ATRIUM_AUTH_PER_EMAIL_PER_MINUTE=1000000 \
    ATRIUM_ARGON2_MEMORY_KIB="${SCHEMATHESIS_ARGON2_MEMORY_KIB:-256}" \
    ATRIUM_ARGON2_ITERATIONS=1 \
    ATRIUM_HASH_CONCURRENCY=8
log "node at $BASE (pid $NODE_PID, data $DATA)"

# 3. Two real accounts.
signup() {
    local email="$1"
    curl -fsS -m 30 -X POST "$BASE/api/signup" -H 'content-type: application/json' \
        -d "{\"email\":\"$email\",\"password\":\"fuzz-password-1\",\"name\":\"Fuzz\"}" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
stamp_ms=$(date +%s%N)
TOKEN=$(signup "fuzz-$stamp_ms@example.com")
SIGNOUT_TOKEN=$(signup "signout-$stamp_ms@example.com")
# A file of the fuzzing account, shared by link, so file routes meet a real file too.
curl -fsS -m 30 -X POST "$BASE/api/files" -H "authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' \
    -d '{"name":"fuzzed","doc":{"p1":{"type":"page"},"r1":{"type":"rect","page":"p1","x":1}}}' \
    >"$OUT/file.json"

# An API key (scopes `server` and `revoke`) made by a server admin, for the operations whose
# security is `apiKeyAuth`, so the server API is fuzzed past its key check too.
ADMIN_TOKEN=$(signup "fuzz-admin@example.com")
API_KEY=$(curl -fsS -m 30 -X POST "$BASE/api/admin/api-keys" -H "authorization: Bearer $ADMIN_TOKEN" \
    -H 'content-type: application/json' -d '{"name":"fuzz","scopes":["server","revoke"]}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
export ATRIUM_FUZZ_API_KEY="$API_KEY"

cat >"$OUT/schemathesis.toml" <<'TOML'
[auth.openapi.bearerAuth]
bearer = "${ATRIUM_FUZZ_TOKEN}"

[auth.openapi.apiKeyAuth]
bearer = "${ATRIUM_FUZZ_API_KEY}"
TOML

common=(
    --url "$BASE"
    --checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance,response_headers_conformance
    --max-examples "$EXAMPLES"
    --request-timeout 20
    # One worker: with two threads, Hypothesis's ast.parse of its lambdas trips CPython
    # 3.11.7's "AST constructor recursion depth mismatch" (a SystemError in the tool, not a
    # finding; seen in CI on 2026-12-01).
    --workers 1
    --suppress-health-check all
    --no-color
    --warnings off
)
[ -n "$SEED" ] && common+=(--seed "$SEED")

failed=0

# 4a. Everything but sign-out (which would end the session the run relies on) and the
# socket upgrade (step 5).
log "fuzzing every operation but sign-out and the socket (max $EXAMPLES examples each, ${MAX_TIME}s at most)"
if ! ATRIUM_FUZZ_TOKEN="$TOKEN" timeout --kill-after=10 "$((MAX_TIME + 30))" \
    "$ST" --config-file "$OUT/schemathesis.toml" run "$SPEC" "${common[@]}" \
    --max-time "$MAX_TIME" \
    --exclude-operation-id signOut --exclude-operation-id openSocket \
    --report junit,ndjson --report-dir "$OUT/main" 2>&1 | tee "$OUT/main.txt"; then
    failed=1
fi

# 4b. Sign-out alone, with its own session: the first authenticated call ends it (204),
# the rest must then be 401.
log "fuzzing sign-out with a session of its own"
if ! ATRIUM_FUZZ_TOKEN="$SIGNOUT_TOKEN" timeout --kill-after=10 90 \
    "$ST" --config-file "$OUT/schemathesis.toml" run "$SPEC" "${common[@]}" \
    --max-time 20 --phases examples,coverage,fuzzing \
    --include-operation-id signOut \
    --report junit,ndjson --report-dir "$OUT/signout" 2>&1 | tee "$OUT/signout.txt"; then
    failed=1
fi

# 5. The socket upgrade's HTTP answers, checked against what the spec documents.
expect_status() {
    local want="$1" what="$2"; shift 2
    local got
    got=$(curl -sS -o "$OUT/ws.body" -w '%{http_code}' -m 3 "$@" 2>/dev/null || true)
    got="${got:0:3}"
    if [ "$got" != "$want" ]; then
        log "FAIL socket upgrade, $what: expected $want, got ${got:-nothing}"
        failed=1
        return
    fi
    if [ "$want" != 101 ] && ! python3 - "$OUT/ws.body" <<'PY'
import json, re, sys
body = json.load(open(sys.argv[1]))
err = body["error"]
assert set(body) == {"error"} and re.fullmatch(r"[a-z]+(-[a-z]+)*", err["code"]) and err["message"]
PY
    then
        log "FAIL socket upgrade, $what: the body is not the error shape: $(head -c 300 "$OUT/ws.body")"
        failed=1
        return
    fi
    log "ok   socket upgrade, $what: $got"
}
file_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$OUT/file.json")
upgrade=(-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13'
         -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==')
expect_status 400 "plain GET" "$BASE/files/$file_id/ws"
expect_status 400 "bad id" "${upgrade[@]}" "$BASE/files/bad.id/ws"
expect_status 400 "id of 65 characters" "${upgrade[@]}" "$BASE/files/$(printf 'a%.0s' $(seq 1 65))/ws"
expect_status 400 "short key" -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
    -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: c2hvcnQ=' "$BASE/files/$file_id/ws"
expect_status 426 "version 8" -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
    -H 'Sec-WebSocket-Version: 8' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$BASE/files/$file_id/ws"
# A real upgrade: curl sees the 101 and gives up at its time limit.
expect_status 101 "a valid upgrade" "${upgrade[@]}" "$BASE/files/$file_id/ws"

# The node must still be alive and have answered no 5xx at all.
if ! kill -0 "$NODE_PID" 2>/dev/null; then
    log "FAIL the node died during the run"
    failed=1
fi
fives=$(curl -fsS -m 5 "$METRICS/metrics" | awk '/^atrium_http_requests_total\{status="5xx"\}/ {print $2}')
requests=$(curl -fsS -m 5 "$METRICS/metrics" | awk '/^atrium_http_requests_total/ {s += $2} END {print s + 0}')
log "the node answered $requests HTTP requests, ${fives:-0} of them 5xx (503 counts there: hashing at capacity)"

if [ "$failed" != 0 ]; then
    log "FAILED: see the output above and $OUT"
    exit 1
fi
ok=1
log "passed: docs/openapi.yaml matches the node"
