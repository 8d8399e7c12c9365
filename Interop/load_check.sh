#!/usr/bin/env bash
# `tessera load` against hosts this script starts: a sound host must pass every check, a recorded
# room's file must play in sync, a host with auth on must pass with the tokens tessera load signs,
# and two deliberately broken hosts (config `testing.faults`) must fail, each naming the broken
# check.
#
#   Interop/load_check.sh TESSERA WORKDIR
#
# Run by Interop/run.sh (the `load` peer) inside its loopback-only network namespace. Each
# host gets its own config in WORKDIR, HTTP on 127.0.0.1:0 and its own media port; every run is
# bounded by its --duration and by a timeout. Prints PASS/FAIL lines; exit status 0 when all hold.
set -u
TESSERA=$1
WORK=$2
mkdir -p "$WORK"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/hosts.sh"
trap stop_host EXIT

# 1. A sound host: 4 participants, 15 s, audio and video, every check passes and the report says
# so. (CI runs debug builds of the host and of the load generator on 2 cores. With a core kept
# busy by something else, 6 video participants put the debug host at its cliff (audio latency
# p95 430 to 610 ms against the 500 ms bound, from starved jitter buffers), 4 leave it at 100 to
# 125 ms. Capacity is measured on release builds: scripts/bench-load.sh.)
if start_host sound 50210 '[]'; then
    run_load sound --room sound --participants 4 --duration 15s --video 640x360@30 --speakers 3
    stop_host
    if [ "$RC" -eq 0 ] && grep -q '<svg' "$WORK/sound-report.html" && python3 -c \
        'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["passed"] else 1)' "$WORK/sound-report.json"; then
        echo "load_check: PASS sound host: every check passed"
        grep -E '^(join|first composite|audio latency|video latency|host CPU|load generator CPU)' "$WORK/sound.out" | sed 's/^/  /'
    else
        echo "load_check: FAIL sound host: tessera load exited $RC"; tail -n 30 "$WORK/sound.out"; failures=$((failures + 1))
    fi
fi

# 2. A recorded room: the file, read back, plays with lips and voices together. A small room on
# a 640x360 canvas: the recording muxes the main encoding's frames, and a debug host on a
# machine busy with something else drops drawings at 1280x720 (a frame lost at an onset shows
# its lips late in the file); at 640x360 it held 16 to 37 ms (p95) with a core kept busy.
if start_host recorded 50240 '[]' ', "video": {"width": 640, "height": 360, "bitrate": 800000}'; then
    run_load recorded --room recorded --participants 3 --speakers 3 --duration 12s --record "$WORK/recordings"
    stop_host
    if [ "$RC" -eq 0 ] && grep -q "check: the recording plays with lips and voices together *PASS" "$WORK/recorded.out"; then
        echo "load_check: PASS recorded room: $(grep -m1 'A/V offset in the recording' "$WORK/recorded.out" | tr -s ' ')"
    else
        echo "load_check: FAIL recorded room: tessera load exited $RC"; tail -n 30 "$WORK/recorded.out"; failures=$((failures + 1))
    fi
fi

# 3. A host with auth on: tessera load signs its tokens with the secret (--secret), and every
# check passes.
if start_host authed 50250 '[]' ', "auth": {"secret": "load-check-secret"}'; then
    run_load authed --room authed --participants 3 --speakers 2 --duration 8s --video 320x180@15 --secret load-check-secret
    stop_host
    if [ "$RC" -eq 0 ]; then
        echo "load_check: PASS host with auth on: every check passed with tokens from --secret"
    else
        echo "load_check: FAIL host with auth on: tessera load exited $RC"; tail -n 20 "$WORK/authed.out"; failures=$((failures + 1))
    fi
fi

# 4./5. Broken hosts: the run must fail, and name the check that caught the fault.
expect_caught() {  # expect_caught NAME MEDIA_PORT FAULT CHECK_NAME
    local name=$1 port=$2 fault=$3 check=$4
    start_host "$name" "$port" "[\"$fault\"]" || { failures=$((failures + 1)); return; }
    run_load "$name" --room "$name" --participants 5 --duration 8s --speakers 3
    stop_host
    if [ "$RC" -eq 1 ] && grep -q "load: FAILED $check" "$WORK/$name.out"; then
        echo "load_check: PASS $fault: caught by \"$(grep -m1 "load: FAILED $check" "$WORK/$name.out" | cut -c1-160)\""
    else
        echo "load_check: FAIL $fault: expected exit 1 naming \"$check\", got exit $RC"; tail -n 30 "$WORK/$name.out"
        failures=$((failures + 1))
    fi
}
expect_caught own-voice 50220 ownVoiceInMix "no one hears their own voice"
expect_caught wrong-slots 50230 camerasInWrongSlots "colours in their slots"

[ "$failures" -eq 0 ]
