#!/usr/bin/env bash
# Soak: one room under churn for DURATION, then the host's resources are compared.
#   scripts/soak.sh [DURATION] [--tessera PATH] [--participants N] [--video WxH@FPS]
# DURATION: 30m by default (2m in CI). 20 guests (3 speaking, 2 decoding the composite) send audio
# and video (320x180@15 by default) while one leaves every 4 s and comes back a second later
# (`tessera load --churn 0.25`). Every 5 s the host's resident memory, threads and open files are
# sampled (WORK/soak.csv). It passes when every check of the load run holds, the host had no late
# media tick, resident memory after the warm-up (the first quarter, at least 30 s) grew by at most
# 5 % of what it was then, and once everyone has left the threads and open files are back to
# what the idle host had. Builds and uses the release host unless --tessera is given (CI gives
# its debug build). Runs in a loopback-only network namespace. Environment: SOAK_DIR
# (/tmp/tessera-soak).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

DURATION=30m TESSERA= PARTICIPANTS=20 VIDEO=320x180@15
while [ $# -gt 0 ]; do
    case $1 in
        --tessera) TESSERA=$(realpath "$2"); shift 2 ;;
        --participants) PARTICIPANTS=$2; shift 2 ;;
        --video) VIDEO=$2; shift 2 ;;
        [0-9]*) DURATION=$1; shift ;;
        *) echo "usage: scripts/soak.sh [DURATION] [--tessera PATH] [--participants N] [--video WxH@FPS]" >&2; exit 2 ;;
    esac
done
case $DURATION in
    *m) SECONDS_TOTAL=$(( ${DURATION%m} * 60 )) ;;
    *s) SECONDS_TOTAL=${DURATION%s} ;;
    *) echo "soak: DURATION like 2m or 90s, not $DURATION" >&2; exit 2 ;;
esac

if [ -z "${TESSERA_SOAK_NETNS:-}" ]; then
    setup_test
    cd "$TESSERA_ROOT"
    if [ -z "$TESSERA" ]; then swift build -c release --product tessera >/dev/null; TESSERA=$TESSERA_ROOT/.build/release/tessera; fi
    flags=-n; [ "$(id -u)" -eq 0 ] || flags=-rn
    TESSERA_SOAK_NETNS=1 exec unshare $flags sh -c 'ip link set lo up && exec "$@"' sh "$0" "$DURATION" \
        --tessera "$TESSERA" --participants "$PARTICIPANTS" --video "$VIDEO"
fi

WORK=${SOAK_DIR:-/tmp/tessera-soak}
rm -rf "$WORK" && mkdir -p "$WORK"
TESSERA_BIN=$TESSERA
TESSERA=$TESSERA_BIN
set +e
source "$TESSERA_ROOT/Interop/hosts.sh"
trap stop_host EXIT
start_host soak 50400 '[]' || exit 1

resources() {  # rss_kib threads fds
    local rss threads
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$HOST_PID/status")
    threads=$(awk '/^Threads/ { print $2 }' "/proc/$HOST_PID/status")
    echo "$rss $threads $(ls "/proc/$HOST_PID/fd" | wc -l)"
}
read -r _ idle_threads idle_fds < <(resources)
echo "soak: $DURATION, $PARTICIPANTS guests sending $VIDEO and audio, one leaving every 4 s; host $TESSERA_BIN"
echo "soak: idle host: $idle_threads threads, $idle_fds open files"

timeout -k 10 $((SECONDS_TOTAL + 60)) "$TESSERA" load --url "$BASE" --room soak --participants "$PARTICIPANTS" --speakers 3 \
    --decoders 2 --video "$VIDEO" --churn 0.25 --duration "$DURATION" --quiet --report "$WORK/soak-report" >"$WORK/soak.out" 2>&1 &
load=$!
echo "seconds,rss_kib,threads,fds,late_audio,late_video" >"$WORK/soak.csv"
start=$(date +%s)
warm=$(( SECONDS_TOTAL / 4 > 30 ? SECONDS_TOTAL / 4 : 30 ))
warm_rss= peak_after=0 late_audio=0 late_video=0
while kill -0 "$load" 2>/dev/null; do
    sleep 5
    now=$(( $(date +%s) - start ))
    read -r rss threads fds < <(resources)
    metrics=$(curl -s --max-time 5 "$BASE/metrics")
    audio=$(echo "$metrics" | awk '$1 == "tessera_tick_late{media=\"audio\"}" { print $2 }')
    video=$(echo "$metrics" | awk '$1 == "tessera_tick_late{media=\"video\"}" { print $2 }')
    # The gauges count the open room: keep the last reading while it is open.
    [ -n "$audio" ] && late_audio=$audio && late_video=${video:-0}
    echo "$now,$rss,$threads,$fds,${audio:-},${video:-}" >>"$WORK/soak.csv"
    if [ "$now" -ge "$warm" ] && [ "$now" -le "$SECONDS_TOTAL" ]; then
        [ -n "$warm_rss" ] || warm_rss=$rss
        [ "$rss" -gt "$peak_after" ] && peak_after=$rss
    fi
done
wait "$load"
load_rc=$?
sleep 3  # the leaves and their transports' timers
read -r end_rss end_threads end_fds < <(resources)
stop_host

failures=()
[ "$load_rc" -eq 0 ] || failures+=("tessera load exited $load_rc: $(grep -E '^load: ' "$WORK/soak.out" | tail -n 1)")
[ "$late_audio" = 0 ] && [ "$late_video" = 0 ] || failures+=("late media ticks: audio $late_audio, video $late_video")
growth=$(python3 -c "print(f'{(${peak_after:-0} - ${warm_rss:-0}) / max(${warm_rss:-1}, 1) * 100:.1f}')")
python3 -c "import sys; sys.exit(0 if $growth <= 5.0 else 1)" || failures+=("resident memory grew $growth % after the warm-up")
[ "$end_threads" -le "$idle_threads" ] || failures+=("threads $end_threads after everyone left, $idle_threads idle")
[ "$end_fds" -le "$idle_fds" ] || failures+=("open files $end_fds after everyone left, $idle_fds idle")

grep -E '^(join|audio latency|video latency|freezes|check)' "$WORK/soak.out" | sed 's/^/  /'
echo "soak: resident memory $((warm_rss / 1024)) MiB after the ${warm} s warm-up, at most $((peak_after / 1024)) MiB after it (+$growth %), $((end_rss / 1024)) MiB once everyone left"
echo "soak: threads $idle_threads idle, $end_threads after; open files $idle_fds idle, $end_fds after; late ticks audio $late_audio, video $late_video"
echo "soak: samples in $WORK/soak.csv; the load report in $WORK/soak-report.html"
if [ ${#failures[@]} -gt 0 ]; then
    printf 'soak: FAIL %s\n' "${failures[@]}"
    exit 1
fi
echo "soak: PASS"
