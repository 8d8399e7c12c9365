#!/usr/bin/env bash
# The noisy room against Janus: N aiortc guests in one audio room, every one sending its own tone
# all the time, joined to Tessera (a release `tessera serve`, its default Top K of 3) and to
# Janus 1.1.2's AudioBridge (Debian's janus package, installed here when missing; a room mixing
# at 48 kHz, each guest's Opus encoder at complexity 5 as Tessera's mixes: AudioBridge's `quality`,
# 4 by default), one host after the other with the same clients (scripts/noisy_room.py). RUNS runs
# each (3), medians: the host's CPU per guest over a 20 s window after an 8 s warm-up, and the
# ratio. A run counts only when every guest heard others and not itself. SPEAKERS=K lets only K of
# the guests send a tone (the others send silence, as a muted browser's track), the usual meeting.
#   scripts/bench-janus.sh [N...]     (default: 8 12 16; the guests, one Python process, take about
#                                     a core at 16 on this 2-core machine, so larger rooms measure the client)
# Inside a private network namespace, as the other benchmarks (with one veth pair for Janus).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_test
ensure_debian_packages janus

source "$(dirname "${BASH_SOURCE[0]}")/bench-host.sh"
in_loopback_namespace "$0" "$@"

cd "$TESSERA_ROOT"
WORK=${BENCH_DIR:-/tmp/tessera-bench-janus}
RUNS=${RUNS:-3}
PYTHON=$TESSERA_ROOT/.venv/bin/python
mkdir -p "$WORK"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(8 12 16)

# Janus gathers ICE candidates on no loopback interface: it gets a veth end of its own in this
# namespace (10.99.0.1; the pair's other end has no address, so nothing is routed anywhere: the
# kernel delivers 127.0.0.1 <-> 10.99.0.1 locally, as loopback).
ip link show janus0 >/dev/null 2>&1 || {
    ip link add janus0 type veth peer name janus1
    ip addr add 10.99.0.1/32 dev janus0
    ip link set janus0 up && ip link set janus1 up
}

# Janus with only the AudioBridge and the plain HTTP transport, on 127.0.0.1:8088.
JANUS_PID=
start_janus() {
    local conf=$WORK/janus
    rm -rf "$conf" && mkdir -p "$conf/plugins" "$conf/transports"
    ln -s /usr/lib/x86_64-linux-gnu/janus/plugins/libjanus_audiobridge.so "$conf/plugins/"
    ln -s /usr/lib/x86_64-linux-gnu/janus/transports/libjanus_http.so "$conf/transports/"
    cat >"$conf/janus.jcfg" <<EOF
general: { configs_folder = "$conf", plugins_folder = "$conf/plugins", transports_folder = "$conf/transports",
           loggers_folder = "$conf/none", events_folder = "$conf/none", debug_level = 3 }
nat: { ice_enforce_list = "janus0" }
EOF
    cat >"$conf/janus.transport.http.jcfg" <<EOF
general: { base_path = "/janus", http = true, port = 8088, ip = "127.0.0.1", https = false }
admin: { admin_http = false }
EOF
    cat >"$conf/janus.plugin.audiobridge.jcfg" <<EOF
general: { }
room-1234: { description = "noisy", sampling_rate = 48000, record = false }
EOF
    janus --configs-folder="$conf" --config="$conf/janus.jcfg" >"$WORK/janus.log" 2>&1 </dev/null &
    JANUS_PID=$!
    for _ in $(seq 100); do
        curl -s -o /dev/null http://127.0.0.1:8088/janus/info && return 0
        sleep 0.1
    done
    echo "bench-janus: Janus did not start (see $WORK/janus.log)" >&2
    return 1
}
stop_janus() {
    [ -n "$JANUS_PID" ] || return 0
    stop_pid "$JANUS_PID"
    JANUS_PID=
}
trap 'stop_host; stop_janus' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
field() { sed -E "s/.*\"$1\": ([0-9.]+).*/\1/"; }

SPEAKERS=${SPEAKERS:-0}
printf '| guests | speaking | Tessera (%% of a core a guest) | Janus AudioBridge | Janus / Tessera | runs that heard (Tessera, Janus) |\n| --- | --- | --- | --- | --- | --- |\n'
for n in "${sizes[@]}"; do
    tessera=() janus=() tessera_ok=0 janus_ok=0
    for run in $(seq "$RUNS"); do
        start_host "$WORK"
        if timeout -k 5 300 "$PYTHON" scripts/noisy_room.py --host tessera --url "$BASE" --pid "$HOST_PID" --guests "$n" --speakers "$SPEAKERS" \
            >"$WORK/tessera-$n-$run.json" 2>"$WORK/tessera-$n-$run.err"; then
            tessera+=("$(field host_cpu_per_guest_pct <"$WORK/tessera-$n-$run.json")"); tessera_ok=$((tessera_ok + 1))
        fi
        stop_host
        start_janus
        if timeout -k 5 300 "$PYTHON" scripts/noisy_room.py --host janus --url http://127.0.0.1:8088/janus --pid "$JANUS_PID" --address 10.99.0.1 \
            --guests "$n" --speakers "$SPEAKERS" >"$WORK/janus-$n-$run.json" 2>"$WORK/janus-$n-$run.err"; then
            janus+=("$(field host_cpu_per_guest_pct <"$WORK/janus-$n-$run.json")"); janus_ok=$((janus_ok + 1))
        fi
        stop_janus
    done
    t=$( [ ${#tessera[@]} -gt 0 ] && printf '%s\n' "${tessera[@]}" | median || echo nan)
    j=$( [ ${#janus[@]} -gt 0 ] && printf '%s\n' "${janus[@]}" | median || echo nan)
    printf '| %d | %s | %s | %s | %s | %d/%d, %d/%d |\n' "$n" "$( [ "$SPEAKERS" -gt 0 ] && echo "$SPEAKERS" || echo all)" "$t" "$j" \
        "$(python3 -c "import math; t, j = float('$t'), float('$j'); print('nan' if math.isnan(t * j) or t == 0 else round(j / t, 2))")" \
        "$tessera_ok" "$RUNS" "$janus_ok" "$RUNS"
done
