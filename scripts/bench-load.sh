#!/usr/bin/env bash
# Room benchmarks with `tessera load` (release builds of host and load generator, on this machine,
# inside a loopback-only network namespace). Each point is 3 runs, each against a fresh host; the
# table holds medians of the runs' figures (each run's figures are its steady window: from the last
# join + 2 s to the end).
#   scripts/bench-load.sh [audio|video|largest|levels|speakers|audio500|rooms]...      (default: audio video)
#     audio    rooms of 10, 50 and 200 guests, 3 speaking, no video
#     video    rooms of 4, 9, 16 and 25 guests sending 640x360@30, a 1280x720@30 composite
#     largest  the largest audio room (3 speaking) and 360p video room whose checks all pass,
#              growing the room until a run fails (bounded: at most 8 sizes each), then RUNS
#              runs at the largest size that passed
#     levels   the audio room of 200 with and without RFC 6464 levels in the guests' packets (the
#              host decodes no packet whose level says silence; without levels it decodes all)
#     speakers an audio room of 50 where everyone speaks (Top K, the host's default K = 3), with and
#              without RFC 6464 levels (with them the host decodes only the voices it mixes)
#     audio500 the audio room of 500 guests, 3 speaking
#     simulcast video rooms of 49, 64 and 100 guests whose cameras send simulcast (640x360, 320x180
#              and 160x90 at 30 fps, `--simulcast`), with the video latency's p95 and the layers
#              the host decoded (SIMULCAST_SIZES overrides the sizes)
#     rooms    many rooms on one host: N rooms of 4 guests (640x360@30, 3 speaking), each its own
#              `tessera load` process, all at once against one fresh host, N = 1 2 4 6 8 10 12
#              growing while a run passes (every load run's checks, and every room's composite
#              received at 90 % of its 30 fps at least), then RUNS runs at the largest N that passed
#              (ROOMS_SIZES overrides the sizes). Each run first waits (at most QUIET_WAIT s, 300)
#              for the shared machine to be quiet, and its row ends with what the whole machine
#              used meanwhile. ROOMS_LOAD_ARGS adds arguments to every load run (e.g. --decoders 1)
# Environment: RUNS (3), BENCH_DIR (/tmp/tessera-bench-load), TESSERA_BIN (another build of
# tessera, e.g. a copy of an earlier commit's, for host and load generators alike).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_test

source "$(dirname "${BASH_SOURCE[0]}")/bench-host.sh"
in_loopback_namespace "$0" "$@"

cd "$TESSERA_ROOT"
TESSERA=${TESSERA_BIN:-$TESSERA_ROOT/.build/release/tessera}
WORK=${BENCH_DIR:-/tmp/tessera-bench-load}
RUNS=${RUNS:-3}
mkdir -p "$WORK"
trap stop_host EXIT

# simulcast_point N: RUNS runs of a video room of N simulcast cameras; prints one table row of medians.
simulcast_point() {
    local n=$1 reports=()
    for run in $(seq "$RUNS"); do
        one_run "simulcast-$n-$run" --participants "$n" --speakers 3 --video 640x360@30 --simulcast --join-rate 10 --duration 30s
        reports+=("$WORK/simulcast-$n-$run.json")
    done
    python3 - "${reports[@]}" <<'PY'
import json, statistics, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
def med(key, scale=1.0):
    values = [r["figures"].get(key) for r in runs]
    values = [v * scale for v in values if v is not None]
    return f"{statistics.median(values):.3g}" if values else "-"
layers = {}
for r in runs:
    for rid, count in (r["figures"].get("simulcastLayers") or {}).items():
        layers.setdefault(rid, []).append(count)
decoded = ", ".join(f"{rid} {statistics.median(c):g}" for rid, c in sorted(layers.items())) or "-"
passed = sum(1 for r in runs if r["passed"])
print(f"| {runs[0]['figures']['participants']} | {passed}/{len(runs)} | {med('hostCPU')} | {med('compositeFramesPerSecond')} "
      f"| {med('cameraFramesDecodedPerSecond')} | {med('audioLatencyMillisecondsP95')} | {med('videoLatencyMillisecondsMedian')} / {med('videoLatencyMillisecondsP95')} "
      f"| {decoded} | {med('loadGeneratorCPUPerParticipant', 100)} % |")
PY
}

# one_run NAME LOAD_ARGS...: a fresh host, one load run; the report at $WORK/NAME.json; status in RC.
one_run() {
    local name=$1; shift
    start_host "$WORK" ', "limits": {"maxParticipantsPerRoom": 2000}'
    set +e
    timeout -k 5 300 "$TESSERA" load --url "$BASE" --quiet --report "$WORK/$name" "$@" >"$WORK/$name.out" 2>&1
    RC=$?
    set -e
    stop_host
    echo "bench-load: $name: exit $RC: $(grep -E '^load: ' "$WORK/$name.out" | tail -n 1)" >&2
}

# point LABEL N ARGS...: RUNS runs of N participants; prints one table row of medians.
point() {
    local label=$1 n=$2; shift 2
    local reports=()
    for run in $(seq "$RUNS"); do
        one_run "$label-$run" --participants "$n" "$@"
        reports+=("$WORK/$label-$run.json")
    done
    python3 - "$label" "${reports[@]}" <<'PY'
import json, statistics, sys
label, paths = sys.argv[1], sys.argv[2:]
runs = [json.load(open(p)) for p in paths]
def med(key, scale=1.0):
    values = [r["figures"].get(key) for r in runs]
    values = [v * scale for v in values if v is not None]
    return f"{statistics.median(values):.3g}" if values else "-"
passed = sum(1 for r in runs if r["passed"])
f = runs[0]["figures"]
print(f"| {label} | {f['participants']} | {passed}/{len(runs)} | {med('hostCPU')} | {med('hostCPUPerParticipant', 100)} % "
      f"| {med('compositeFramesPerSecond')} | {med('compositePicturesDropped')} | {med('cameraFramesDropped')} | {med('audioLatencyMillisecondsMedian')} "
      f"| {med('videoLatencyMillisecondsMedian')} | {med('lossFractionMax', 100)} % | {med('loadGeneratorCPUPerParticipant', 100)} % |")
PY
}

# rooms_run NAME N: a fresh host, N concurrent `tessera load` runs of 4 video guests, each in its own
# room (room-1 … room-N; started 0.3 s apart); their reports at $WORK/NAME-room-I.json. Prints one
# table row of the run's figures; sets RC (0 when every load run passed and every room's slowest
# receiver got at least 27 composite frames a second).
rooms_run() {
    local name=$1 n=$2 pids=() reports=()
    wait_quiet
    # Every load generator connects from 127.0.0.1: past 32 connections (8 rooms of 4) the
    # host's per-address limit, made for one client, would refuse them.
    HTTP_EXTRA=', "connectionsPerAddress": 1024' start_host "$WORK" ', "limits": {"maxRooms": 100, "maxParticipantsPerRoom": 50}'
    local busy_before; busy_before=$(busy_seconds)
    for i in $(seq "$n"); do
        timeout -k 5 300 "$TESSERA" load --url "$BASE" --quiet --room "room-$i" --participants 4 --speakers 3 \
            --video 640x360@30 --join-rate 10 --duration 25s ${ROOMS_LOAD_ARGS:-} --report "$WORK/$name-room-$i" >"$WORK/$name-room-$i.out" 2>&1 &
        pids+=($!)
        reports+=("$WORK/$name-room-$i.json")
        sleep 0.3
    done
    # The host's /metrics near the end, while every room is open (encoder speeds, encode time).
    (sleep 20 && curl -s --max-time 5 "$BASE/metrics" >"$WORK/$name.metrics" 2>/dev/null) &
    local metrics=$! failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
    wait "$metrics" || true
    local busy_after; busy_after=$(busy_seconds)
    stop_host
    set +e
    python3 - "$n" "$failed" "$WORK/$name.summary.json" "$busy_before" "$busy_after" "${reports[@]}" <<'PY'
import json, sys
n, failed, summary, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[6:]
busy_before, busy_after = (tuple(map(float, a.split())) for a in sys.argv[4:6])
machine = (busy_after[0] - busy_before[0]) / max(1e-9, busy_after[1] - busy_before[1])
runs = []
for p in paths:
    try: runs.append(json.load(open(p)))
    except (OSError, ValueError): pass
passed = sum(1 for r in runs if r["passed"])
def vals(key): return [r["figures"][key] for r in runs if r["figures"].get(key) is not None]
cpu = sorted(vals("hostCPU")); fps = vals("compositeFramesReceivedPerSecondMin"); p95 = vals("videoLatencyMillisecondsP95")
load = vals("loadGeneratorCPU"); dropped = vals("compositePicturesDropped")
host = f"{cpu[len(cpu) // 2]:.3g}" if cpu else "-"
ok = failed == 0 and passed == n and len(fps) == n and min(fps) >= 27
json.dump({"rooms": n, "passed": passed, "ok": ok, "hostCPU": cpu[len(cpu) // 2] if cpu else None,
           "fps": min(fps) if fps else None, "p95": max(p95) if p95 else None,
           "dropped": max(dropped) if dropped else None, "load": sum(load), "machine": machine}, open(summary, "w"))
print(f"| {n} | {passed}/{n} | {host} | {min(fps):.3g} | {max(p95):.0f} ms | {max(dropped):.0f} | {sum(load):.3g} | {machine:.2f} |" if fps and p95 and dropped
      else f"| {n} | {passed}/{n} | {host} | - | - | - | {sum(load):.3g} | {machine:.2f} |")
for r in runs:
    if not r["passed"]:
        failing = [c["name"] for c in r["checks"] if not c["passed"]]
        # A late instant of the host's media while this generator's own tick was late is the
        # generator's (or the machine's) as much as the host's.
        late, at = r["figures"].get("loadTickLateMillisecondsMax"), r["figures"].get("loadTickLateAtSeconds")
        own = f"; its generator's own send tick at worst {late:.0f} ms late at {at:.1f} s" if late is not None and at is not None else ""
        print(f"bench-load: {r['room']}: failed {', '.join(failing)}{own}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
    RC=$?
    set -e
}

rooms_header() {
    echo "| rooms of 4 | load runs passed | host CPU (cores) | composite fps, slowest receiver of any room | video latency p95, worst room | composite pictures dropped (host) | load generators' CPU (cores, all) | machine busy (cores, everything) |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
}

# busy_seconds: the machine's busy CPU seconds (every process, /proc/stat) and the uptime, "BUSY UP".
busy_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '/^cpu / { print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat | tr '\n' ' '
    cut -d' ' -f1 /proc/uptime
}

# wait_quiet: the machine is shared; waits (at most QUIET_WAIT seconds, 300) until the last 2 s had
# under 0.3 cores busy, so that a run measures this host and its load generators, not a build
# beside them. The table's last column says what the machine did during each run.
wait_quiet() {
    local waited=0 a b
    while [ "$waited" -lt "${QUIET_WAIT:-300}" ]; do
        a=$(busy_seconds); sleep 2; b=$(busy_seconds)
        python3 -c "import sys; a, b = (tuple(map(float, x.split())) for x in sys.argv[1:]); sys.exit(0 if (b[0] - a[0]) / (b[1] - a[1]) < 0.3 else 1)" "$a" "$b" && return 0
        waited=$((waited + 2))
    done
    echo "bench-load: the machine stayed busy for ${QUIET_WAIT:-300} s; measuring anyway" >&2
}

# rooms: grows N while a run passes (one run per size), then RUNS runs at the largest that passed.
rooms() {
    local best=0
    rooms_header
    for n in ${ROOMS_SIZES:-1 2 4 6 8 10 12}; do
        rooms_run "rooms-$n" "$n"
        [ "$RC" -eq 0 ] || break
        best=$n
    done
    echo "largest number of rooms of 4 whose checks all pass (one run per size): $best"
    [ "$best" -gt 0 ] || return 0
    rooms_header
    local summaries=()
    for run in $(seq "$RUNS"); do
        rooms_run "rooms-$best-run-$run" "$best"
        summaries+=("$WORK/rooms-$best-run-$run.summary.json")
    done
    python3 - "${summaries[@]}" <<'PY'
import json, statistics, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
def med(key, fmt):
    values = [r[key] for r in runs if r[key] is not None]
    return fmt.format(statistics.median(values)) if values else "-"
print(f"| {runs[0]['rooms']} (medians of {len(runs)} runs; {sum(r['ok'] for r in runs)}/{len(runs)} runs passed) "
      f"| {sum(r['passed'] for r in runs)}/{sum(r['rooms'] for r in runs)} | {med('hostCPU', '{:.3g}')} | {med('fps', '{:.3g}')} "
      f"| {med('p95', '{:.0f}')} ms | {med('dropped', '{:.0f}')} | {med('load', '{:.3g}')} | {med('machine', '{:.2f}')} |")
PY
}

header() {
    echo "| room | guests | runs passed | host CPU (cores) | host CPU per guest (of a core) | composite fps | composite pictures dropped | camera frames dropped | audio latency (ms) | video latency (ms) | worst loss | load generator CPU per guest |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
}

# largest_args KIND N: the load's arguments; the run lasts its joins and 15 s more (30 s at least
# for audio, 25 s for video), so that the last to join have a steady window too.
largest_args() {
    if [ "$1" = audio ]; then echo "--speakers 3 --video off --join-rate 40 --duration $(( $2 / 40 + 15 > 30 ? $2 / 40 + 15 : 30 ))s"
    else echo "--speakers 3 --video 640x360@30 --join-rate 10 --duration $(( $2 / 10 + 15 > 25 ? $2 / 10 + 15 : 25 ))s"; fi
}

# largest KIND SIZES...: grows the room while one run per size passes, then RUNS runs at the
# largest size that passed: their table row of medians.
largest() {
    local kind=$1; shift
    local best=0
    for n in "$@"; do
        # shellcheck disable=SC2046
        one_run "largest-$kind-$n" --participants "$n" $(largest_args "$kind" "$n")
        [ "$RC" -eq 0 ] || break
        best=$n
    done
    echo "largest $kind room whose checks all pass (one run per size): $best"
    [ "$best" -gt 0 ] || return 0
    header
    # shellcheck disable=SC2046
    point "largest-$kind-$best" "$best" $(largest_args "$kind" "$best")
}

modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(audio video)
for mode in "${modes[@]}"; do
    case $mode in
        audio)
            header
            point audio-10 10 --speakers 3 --video off --join-rate 20 --duration 20s
            point audio-50 50 --speakers 3 --video off --join-rate 20 --duration 20s
            point audio-200 200 --speakers 3 --video off --join-rate 40 --duration 30s ;;
        simulcast)
            echo "| guests | runs passed | host CPU (cores) | composite fps | camera frames decoded /s | audio latency p95 (ms) | video latency median / p95 (ms) | layers decoded (guests) | load generator CPU per guest |"
            echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
            for n in ${SIMULCAST_SIZES:-49 64 100}; do simulcast_point "$n"; done ;;
        video)
            header
            for n in 4 9 16 25; do point "video-$n" "$n" --speakers 3 --video 640x360@30 --join-rate 10 --duration 20s; done ;;
        levels)
            header
            point audio-200-levels 200 --speakers 3 --video off --join-rate 40 --duration 30s --audio-levels on
            point audio-200-no-levels 200 --speakers 3 --video off --join-rate 40 --duration 30s --audio-levels off ;;
        speakers)
            header
            point speakers-50-levels 50 --speakers 50 --video off --join-rate 20 --duration 20s --audio-levels on
            point speakers-50-no-levels 50 --speakers 50 --video off --join-rate 20 --duration 20s --audio-levels off ;;
        audio500)
            header
            point audio-500 500 --speakers 3 --video off --join-rate 40 --duration 30s ;;
        rooms)
            rooms ;;
        largest)
            largest audio 200 400 600 800 1000 1200 1400 1600
            largest video 16 25 36 49 64 ;;
        *) echo "bench-load: unknown mode $mode (audio, video, largest, levels, speakers, audio500, rooms)" >&2; exit 2 ;;
    esac
done
