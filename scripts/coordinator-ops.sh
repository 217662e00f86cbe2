#!/usr/bin/env bash
# Coordinator operations a second on one node holding N open files, by operation.
#
#   scripts/coordinator-ops.sh [FILES...]        (default: 100 1000 5000)
#
# Starts one release atrium-node on the embedded store with the suite's NATS server as its
# coordinator (scripts/services.sh start first), opens FILES rooms with one quiet socket each
# through the load tool, and reads `atrium_coordinator_operations_total` from the node's
# admin address at the start and the end of a 10 s window while every room stays open.
# Loopback only; each size stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
source .services/env
cargo build --release -q -p atrium-node -p atrium-loadtest
bin=target/release
sizes=("$@")
[ $# -eq 0 ] && sizes=(100 1000 5000)

cpu_ms() { # CPU time of a process so far, in ms
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) * 1000 / hz}' "/proc/$1/stat"
}
nats=$(pgrep -o nats-server)

ops() { # the node's coordinator operations by label, as "op=count ..."
  curl -s "http://127.0.0.1:$1/metrics" |
    awk -F'[{}" ]+' '/^atrium_coordinator_operations_total\{/ {printf "%s=%s ", $3, $NF}'
}

for files in "${sizes[@]}"; do
  data=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  admin=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  ATRIUM_BIND=127.0.0.1:$port ATRIUM_ADMIN_BIND=127.0.0.1:$admin ATRIUM_DATA=$data \
  ATRIUM_COORDINATOR="$ATRIUM_TEST_NATS_URL?namespace=ops$files$RANDOM" ATRIUM_NODE_ID=ops \
  ATRIUM_WS_PER_IP=100000 ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND=0 ATRIUM_WS_PER_SECOND=100000 \
  ATRIUM_FILE_CREATES_PER_MINUTE=1000000 ATRIUM_AUTH_PER_IP_PER_MINUTE=100000 \
  ATRIUM_FILES_PER_ACCOUNT=100000 \
  ATRIUM_LOG=warn "$bin/atrium-node" >"$data/node.log" 2>&1 &
  node=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  # Quiet sockets: no edits, no presence; the rooms stay open for the whole run.
  "$bin/atrium-loadtest" --url "http://127.0.0.1:$port" --i-have-permission \
    --users "$files" --files "$files" --editors 0 --presence-rate 0 \
    --warmup 5 --duration 30 >"$data/load.log" 2>&1 &
  load=$!
  # The window starts once every room is open (setting up thousands of files takes a while).
  for _ in $(seq 1200); do
    open=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^atrium_rooms / {print $2}')
    [ "${open:-0}" -ge "$files" ] && break
    kill -0 "$load" 2>/dev/null || { echo "the load tool ended early:"; tail -20 "$data/load.log"; break; }
    sleep 0.1
  done
  before=$(ops "$admin"); t0=$(date +%s.%N); n0=$(cpu_ms "$nats"); c0=$(cpu_ms "$node")
  sleep 10
  after=$(ops "$admin"); t1=$(date +%s.%N); n1=$(cpu_ms "$nats"); c1=$(cpu_ms "$node")
  rooms=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^atrium_rooms / {print $2}')
  python3 - "$files" "$rooms" "$t0" "$t1" "$before" "$after" "$n0" "$n1" "$c0" "$c1" <<'PY'
import sys
files, rooms, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
nats_ms, node_ms = float(sys.argv[8]) - float(sys.argv[7]), float(sys.argv[10]) - float(sys.argv[9])
parse = lambda s: dict(kv.split('=') for kv in s.split())
b, a = parse(sys.argv[5]), parse(sys.argv[6])
secs = t1 - t0
rates = {k: (float(a[k]) - float(b.get(k, 0))) / secs for k in a}
total = sum(rates.values())
busy = ", ".join(f"{k} {v:.1f}" for k, v in sorted(rates.items()) if v > 0)
print(f"{files} files ({rooms} rooms open): {total:.1f} coordinator operations a second ({busy}); "
      f"CPU a second: nats-server {nats_ms / secs:.0f} ms, node {node_ms / secs:.0f} ms; "
      f"per operation: nats-server {1000 * nats_ms / max(total * secs, 1):.0f} us")
PY
  wait "$load" || true
  kill "$node"; wait "$node" 2>/dev/null || true
  rm -rf "$data"
done
