#!/usr/bin/env bash
# The node's benchmark: CPU per delivered update at 200, 1,000 and 2,000 people, and the
# capacity search (the most people one core carries with edit relay p99 under 50 ms and
# nothing dropped), with the node pinned to one CPU and the load tool to another.
#
#   scripts/bench.sh                       # release builds of this checkout
#   scripts/bench.sh --server OTHER/atrium-node --label before   # another build, same tool
#   scripts/bench.sh --quick               # shorter windows, coarser search (a look, not figures)
#   scripts/bench.sh --write-docs          # also put the table into docs/scaling.md
#
# The shape is the side-by-side one of docs/scaling.md: rooms of 10 on one page, a tenth
# of the people editing at 2 patches a second, everyone's cursor at 20 a second.
# Figures are only worth recording from a quiet machine: the script warns when other work
# used more than a tenth of a core during a run, and the load tool flags runs it could not
# drive (`generator_limited`); the search stops at such a run and says so.
#
# Results: BENCH_OUT (default target/bench/<UTC time>) gets every run's JSON report and
# summary.md, the table printed at the end. Loopback only; every run stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER=""
LABEL="this checkout"
QUICK=0
WRITE_DOCS=0
while [ $# -gt 0 ]; do
    case "$1" in
        --server) SERVER="$2"; shift 2 ;;
        --label) LABEL="$2"; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --write-docs) WRITE_DOCS=1; shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

cpus=$(nproc)
if [ "$cpus" -lt 2 ]; then
    echo "bench.sh: needs 2 CPUs (node on one, load tool on the other); this machine has $cpus" >&2
    exit 2
fi
NODE_CPU=$((cpus - 1))
GEN_CPU=0

cargo build --release -q -p atrium-node -p atrium-loadtest
TOOL=target/release/atrium-loadtest
SERVER="${SERVER:-target/release/atrium-node}"
OUT="${BENCH_OUT:-target/bench/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"

if [ "$QUICK" = 1 ]; then DURATION=8; STEP_MIN=500; else DURATION=15; STEP_MIN=250; fi

# run NAME USERS: one run of the shape above; its report goes to $OUT/NAME.json.
run() {
    local name=$1 users=$2
    local files=$(((users + 9) / 10))
    echo "bench: $name ($users people, $files files)" >&2
    "$TOOL" --spawn --server "$SERVER" --users "$users" --files "$files" --pages 1 \
        --editors 0.1 --edit-rate 2 --presence-rate 20 --warmup 3 --duration "$DURATION" \
        --pin-server "$NODE_CPU" --pin-generator "$GEN_CPU" --label "$LABEL $name" \
        --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1 || {
        echo "bench: the run $name failed; see $OUT/$name.txt" >&2
        return 1
    }
}

# verdict NAME: "pass", "fail: why" or "limited: why" for the capacity criterion.
verdict() {
    python3 - "$OUT/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["problems"]
lost = p["dropped_patches"] + p["out_of_order"] + p["unacked_patches"]
if r["generator"].get("generator_limited"):
    print("limited:", r["generator"].get("generator_limited_reason", ""))
elif r["connected"] < r["users"] or p["connection_errors"]:
    print(f"fail: {r['connected']} of {r['users']} connected, {p['connection_errors']} connection errors")
elif lost:
    print(f"fail: {lost} patches dropped, out of order or unacked")
elif r["patch_relay_ms"]["p99"] >= 50:
    print(f"fail: edit relay p99 {r['patch_relay_ms']['p99']:.1f} ms")
else:
    print("pass")
PY
}

for n in 200 1000 2000; do
    run "people-$n" "$n"
done

# The capacity search: up by a quarter while runs pass, then halve the gap between the
# last pass and the first failure down to STEP_MIN people.
pass=0
fail=0
limited=""
users=1000
while :; do
    run "search-$users" "$users"
    v=$(verdict "search-$users")
    echo "bench:   $users people: $v" >&2
    case "$v" in
        pass) pass=$users ;;
        limited*) limited="$users people: ${v#limited: }"; break ;;
        *) fail=$users; break ;;
    esac
    users=$((users + users / 4))
    [ "$users" -le 20000 ] || break
done
if [ -z "$limited" ] && [ "$fail" -gt 0 ]; then
    lo=$pass
    hi=$fail
    while [ $((hi - lo)) -gt "$STEP_MIN" ]; do
        mid=$(((lo + hi) / 2))
        run "search-$mid" "$mid"
        v=$(verdict "search-$mid")
        echo "bench:   $mid people: $v" >&2
        case "$v" in
            pass) lo=$mid ;;
            limited*) limited="$mid people: ${v#limited: }"; break ;;
            *) hi=$mid ;;
        esac
    done
    pass=$lo
fi

python3 - "$OUT" "$LABEL" "$pass" "$limited" "$SERVER" <<'PY' > "$OUT/summary.md"
import glob, json, os, platform, subprocess, sys, time
out, label, capacity, limited, server = sys.argv[1:6]
def load(name):
    return json.load(open(os.path.join(out, name + ".json")))
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
# Another build's node is named by its path: this checkout's commit is only the load tool's.
if server == "target/release/atrium-node":
    what = f"`{server}` of checkout {commit}"
else:
    what = f"`{server}`, driven by the load tool of checkout {commit}"
print(f"Benchmark of {label} ({what}), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
      f"{os.cpu_count()} CPUs ({model}), node pinned to one CPU and the load tool to another; `scripts/bench.sh`.")
print()
print("| people | node CPU µs per delivered update | node cores | edit relay p99 ms | send to ack p99 ms | KB per connection | other work on the machine (cores) | generator limited |")
print("|---|---|---|---|---|---|---|---|")
for n in (200, 1000, 2000):
    r = load(f"people-{n}")
    s, g = r["server"], r["generator"]
    other = r.get("machine", {}).get("other_cores")
    print(f"| {n:,} | {s['cpu_us_per_delivered_update']:.2f} | {s['cpu_cores']:.2f} | {r['patch_relay_ms']['p99']:.1f} | "
          f"{r['patch_ack_ms']['p99']:.1f} | {s['kb_per_connection']:.1f} | {'' if other is None else f'{other:.2f}'} | "
          f"{'yes' if g.get('generator_limited') else 'no'} |")
print()
runs = sorted(glob.glob(os.path.join(out, "search-*.json")), key=lambda p: int(p.rsplit("-", 1)[1][:-5]))
steps = ", ".join(f"{json.load(open(p))['users']:,} (p99 {json.load(open(p))['patch_relay_ms']['p99']:.0f} ms)" for p in runs)
found = f"**{int(capacity):,} people**" if int(capacity) else "not found (the first step did not pass)"
print(f"Capacity (edit relay p99 under 50 ms, nothing dropped, one core): {found}"
      + (f"; the search stopped where the load tool became the limit ({limited})" if limited else "")
      + f". Steps: {steps}.")
PY
cat "$OUT/summary.md"

# Other work on the machine spoils the figures: say so.
python3 - "$OUT" <<'PY' >&2
import glob, json, sys
for p in sorted(glob.glob(sys.argv[1] + "/*.json")):
    other = json.load(open(p)).get("machine", {}).get("other_cores")
    if other is not None and other > 0.1:
        print(f"bench: warning: {p}: other work used {other:.2f} cores during the run; the machine was not quiet")
PY

if [ "$WRITE_DOCS" = 1 ]; then
    python3 - "$OUT/summary.md" docs/scaling.md <<'PY'
import sys
summary, doc = sys.argv[1], sys.argv[2]
text = open(doc).read()
begin, end = "<!-- bench.sh: begin -->", "<!-- bench.sh: end -->"
if begin not in text or end not in text:
    sys.exit(f"bench.sh: {doc} has no {begin} ... {end} block to fill")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(doc, "w").write(head + begin + "\n" + open(summary).read() + end + tail)
print(f"bench: wrote the table into {doc}", file=sys.stderr)
PY
fi
echo "bench: reports in $OUT" >&2
