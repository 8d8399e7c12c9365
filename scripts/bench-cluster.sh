#!/usr/bin/env bash
# The viewer cascade's figure (docs/cluster.md, "Viewers at edge hosts"): the owner's CPU while
# two edge hosts serve 2, 10, 50 and 100 composite viewers of its room in total, half at each.
# Release builds, on this machine, inside a loopback-only network namespace, with redis-server.
#   scripts/bench-cluster.sh
# One owner host, two edge hosts ("cluster": {"edge": true}) and Redis start once; one
# `tessera load` guest at the owner sends a 640x360@30 camera and a tone (the owner composes and
# encodes its 1280x720@30 composite); for each total, RUNS runs: `tessera view` joins half the
# viewers at each edge for 30 s, and the owner's CPU (utime + stime from /proc) is read over the
# steady window from 10 s to 25 s. Each row holds the medians of the runs.
# The whole run holds /tmp/tessera-bench.lock (the machine is shared: one measurement at a time).
# Environment: RUNS (3), SIZES ("2 10 50 100"), BENCH_DIR (/tmp/tessera-bench-cluster),
# TESSERA_BIN (another build of tessera).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_test

source "$(dirname "${BASH_SOURCE[0]}")/bench-host.sh"
in_loopback_namespace "$0" "$@"

exec 9>/tmp/tessera-bench.lock
flock 9

cd "$TESSERA_ROOT"
TESSERA=${TESSERA_BIN:-$TESSERA_ROOT/.build/release/tessera}
WORK=${BENCH_DIR:-/tmp/tessera-bench-cluster}
RUNS=${RUNS:-3}
SIZES=${SIZES:-"2 10 50 100"}
REDIS_PORT=6395
rm -rf "$WORK"
mkdir -p "$WORK"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    sleep 1
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

# node NAME PORT EDGE: a host of the cluster; prints its pid.
node() {
    local name=$1 port=$2 edge=$3
    cat >"$WORK/$name.json" <<EOF
{"http": {"listen": "127.0.0.1:$port"}, "media": {"listen": "127.0.0.1:$((port + 42000))", "tcpListen": "off"},
 "recordings": {"folder": "$WORK/recordings-$name"},
 "cluster": {"redis": "redis://127.0.0.1:$REDIS_PORT", "node": "$name", "url": "http://127.0.0.1:$port", "edge": $edge}}
EOF
    "$TESSERA" serve --config "$WORK/$name.json" >"$WORK/$name.out" 2>"$WORK/$name.log" </dev/null &
    echo $!
}
OWNER=$(node owner 8091 false); PIDS+=("$OWNER")
for _ in $(seq 100); do curl -fs http://127.0.0.1:8091/healthz >/dev/null && break; sleep 0.1; done
# The guest joins at the owner first, so the room is placed there; it stays for the whole bench.
"$TESSERA" load --url http://127.0.0.1:8091 --room bench --participants 1 --speakers 1 --video 640x360@30 --duration 60m \
    --report none --quiet >"$WORK/guest.log" 2>&1 </dev/null &
PIDS+=($!)
sleep 3
E1=$(node e1 8092 true); PIDS+=("$E1")
E2=$(node e2 8093 true); PIDS+=("$E2")
for port in 8092 8093; do
    for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
done
sleep 2

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
frames() { curl -fs http://127.0.0.1:8091/metrics | awk '$1 == "tessera_video_frames_composed" {print $2}'; }
HZ=$(getconf CLK_TCK)

# point N: RUNS runs of N viewers (N/2 at each edge); one row of medians.
point() {
    local n=$1 half=$(( $1 / 2 )) rows=()
    for run in $(seq "$RUNS"); do
        "$TESSERA" view --url http://127.0.0.1:8092 --room bench --viewers "$half" --duration 30s >"$WORK/view-$n-$run-e1.log" 2>&1 &
        local v1=$!
        "$TESSERA" view --url http://127.0.0.1:8093 --room bench --viewers "$half" --duration 30s >"$WORK/view-$n-$run-e2.log" 2>&1 &
        local v2=$!
        sleep 10
        local o0 e10 e20 f0 o1 e11 e21 f1
        o0=$(ticks "$OWNER"); e10=$(ticks "$E1"); e20=$(ticks "$E2"); f0=$(frames)
        sleep 15
        o1=$(ticks "$OWNER"); e11=$(ticks "$E1"); e21=$(ticks "$E2"); f1=$(frames)
        local ok=yes
        wait "$v1" || ok=no
        wait "$v2" || ok=no
        local owner_viewers
        owner_viewers=$(curl -fs http://127.0.0.1:8091/v1/rooms/bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["viewers"])' 2>/dev/null || echo "?")
        rows+=("$(python3 -c "print(($o1-$o0)/$HZ/15, ($e11-$e10)/$HZ/15, ($e21-$e20)/$HZ/15, ($f1-$f0)/15)") $ok")
        echo "bench-cluster: $n viewers, run $run: owner/e1/e2 cores, composite fps: ${rows[-1]}" >&2
    done
    python3 - "$n" "${rows[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
runs = [r.split() for r in sys.argv[2:]]
def med(i):
    return statistics.median(float(r[i]) for r in runs)
ok = all(r[4] == "yes" for r in runs)
print(f"| {n} | {med(0):.3f} | {med(1):.3f} | {med(2):.3f} | {med(3):.1f} | {'all' if ok else 'NOT all'} |")
PY
}

echo "| viewers in total (half at each edge) | owner CPU, cores | edge e1 CPU, cores | edge e2 CPU, cores | owner's composite, frames/s | every viewer got frames and mix |"
echo "| --- | --- | --- | --- | --- | --- |"
for n in $SIZES; do point "$n"; done
