#!/usr/bin/env bash
# The network table of docs/network.md: `tessera load` (release builds, on this machine, inside a
# loopback-only network namespace) with 6 participants (3 speaking, 640x360@30 cameras, a
# 1280x720@30 composite) for 20 s at each loss (0, 2, 5, 10, 20 %) and jitter (0, 50, 100 ms)
# both ways, each participant's network its own and seeded, with a 2 s blackout at 12 s. Each
# cell is one run against a fresh host, recorded (the file's lip sync is read back); prints a
# Markdown table of its figures.
#   scripts/network-table.sh [LOSSES] [JITTERS]      e.g. scripts/network-table.sh "0 5" "0 50"
# Environment: NETWORK_DIR (/tmp/tessera-network), PARTICIPANTS (6), SECONDS_PER_RUN (20).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_test

source "$(dirname "${BASH_SOURCE[0]}")/bench-host.sh"
in_loopback_namespace "$0" "$@"

cd "$TESSERA_ROOT"
TESSERA=$TESSERA_ROOT/.build/release/tessera
WORK=${NETWORK_DIR:-/tmp/tessera-network}
PARTICIPANTS=${PARTICIPANTS:-6}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-20}
LOSSES=${1:-"0 2 5 10 20"}
JITTERS=${2:-"0 50 100"}
mkdir -p "$WORK"
trap stop_host EXIT

echo "| loss | jitter | checks | freezes (longest) | mix concealed | audio latency p50 / p95 | video latency p50 / p95 | A/V offset p50 / p95 | in the recording | NACKs / resent | key frames per receiver | back after a 2 s blackout: mix / composite |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for loss in $LOSSES; do
    for jitter in $JITTERS; do
        name="loss${loss}-jitter${jitter}"
        start_host "$WORK"
        set +e
        timeout -k 5 120 "$TESSERA" load --url "$BASE" --quiet --participants "$PARTICIPANTS" --duration "${SECONDS_PER_RUN}s" \
            --loss "${loss}%" --jitter "${jitter}ms" --seed 1 --blackout 12s --record "$WORK/recordings" --report "$WORK/$name" >"$WORK/$name.out" 2>&1
        set -e
        stop_host
        python3 - "$WORK/$name.json" "$loss" "$jitter" <<'PY'
import json, sys
path, loss, jitter = sys.argv[1:4]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"| {loss} % | {jitter} ms | no report ({e}) | | | | | | | | | |")
    sys.exit(0)
f = r["figures"]
def ms(x): return "-" if x is None else f"{x:.0f} ms"
def pct(x): return "-" if x is None else f"{x * 100:.1f} %"
failed = [c["name"] for c in r["checks"] if not c["passed"]]
checks = "all pass" if not failed else "fail: " + "; ".join(failed)
print(f"| {loss} % | {jitter} ms | {checks} | {f['freezes']} ({ms(f['longestFreezeMilliseconds'])}) | {pct(f.get('audioConcealedFractionMedian'))} "
      f"| {ms(f.get('audioLatencyMillisecondsMedian'))} / {ms(f.get('audioLatencyMillisecondsP95'))} "
      f"| {ms(f.get('videoLatencyMillisecondsMedian'))} / {ms(f.get('videoLatencyMillisecondsP95'))} "
      f"| {ms(f.get('avOffsetMillisecondsMedian'))} / {ms(f.get('avOffsetMillisecondsP95'))} "
      f"| {ms(f.get('recordingAVOffsetMillisecondsMedian'))} / {ms(f.get('recordingAVOffsetMillisecondsP95'))} "
      f"| {f['nacksSent']} / {f['retransmissionsReceived']} | {f.get('keyFramesPerReceiverMedian') or 0:.0f} "
      f"| {ms(f.get('audioRecoveryMillisecondsMax'))} / {ms(f.get('videoRecoveryMillisecondsMax'))} |")
PY
    done
done
