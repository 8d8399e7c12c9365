#!/usr/bin/env bash
# The host under attack and under faults, each while a room is in session, against hosts this
# script starts:
#   1. attack: three guests check their mixes and slots while `tessera load --attack` sends
#      garbage, floods, forged RTCP, hostile SDP, joins that never connect and malformed HTTP;
#      every check holds, /metrics counts the drops by reason and the expired joins, and the
#      host's peak memory stays under 256 MiB;
#   2. vanish: a guest's process is killed (no BYE, no DELETE); within the consent bound (30 s,
#      RFC 7675) its tracks end, it leaves with `consent lost`, and its transport is freed;
#   3. crash: kill -9 of the host while recording; the file plays to within 2 s of the kill;
#   4. full disk: the recordings folder is a small tmpfs; the recording stops with
#      `recordingStopped` and the reason, and the guests' checks hold;
#   5. removed folder: the recordings folder is removed while recording; the same.
#
#   Interop/faults_check.sh TESSERA WORKDIR [STEP...]      (STEP: attack vanish crash full-disk removed)
#
# Run by Interop/run.sh (the `faults` peer) inside its loopback-only network namespace; every
# step is bounded by timeouts. Prints PASS/FAIL lines; exit status 0 when all hold.
set -u
TESSERA=$1
WORK=$2
shift 2
STEPS=" ${*:-attack vanish crash full-disk removed} "
want() { [[ $STEPS == *" $1 "* ]]; }
mkdir -p "$WORK"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/hosts.sh"
BACKGROUND=()
cleanup() {
    stop_host
    for pid in "${BACKGROUND[@]}"; do kill -KILL "$pid" 2>/dev/null; done
}
trap cleanup EXIT
pass() { echo "faults_check: PASS $1"; }
fail() { echo "faults_check: FAIL $1"; failures=$((failures + 1)); }

# watch_events ROOM FILE: the room's event stream, into FILE, in the background.
watch_events() {
    curl -s -N --max-time 150 "$BASE/v1/rooms/$1/events" >"$2" 2>/dev/null &
    BACKGROUND+=($!)
}

# 1. Attack. The bound on memory: the debug host peaks near 110 MiB here, attacked or not.
MEMORY_BOUND_KIB=$((256 * 1024))
if want attack && start_host attack 50310 '[]' ', "video": {"width": 640, "height": 360, "bitrate": 800000}'; then
    run_load attack --room attack --participants 3 --speakers 3 --duration 30s --video 320x180@15 --attack
    peak=$(awk '/^VmHWM/ { print $2 }' "/proc/$HOST_PID/status")
    drops=$(curl -s --max-time 5 "$BASE/metrics" | grep '^tessera_datagrams_dropped_total')
    expired=$(metric tessera_joins_expired_total)
    stop_host
    missing=
    for reason in unroutable unknown_kind stun_rejected srtp_rejected dtls_rejected; do
        value=$(echo "$drops" | awk -v reason="reason=\"$reason\"" 'index($1, reason) { print $2 }')
        [ "${value:-0}" -gt 0 ] || missing="$missing $reason"
    done
    if [ "$RC" -ne 0 ]; then
        fail "attack: tessera load exited $RC"; grep -E '^(check|load):' "$WORK/attack.out" | cut -c1-400
    elif [ -n "$missing" ]; then
        fail "attack: /metrics counted no drops for:$missing"; echo "$drops"
    elif [ "${expired:-0}" -eq 0 ]; then
        fail "attack: no join that never connected was dropped (tessera_joins_expired_total ${expired:-?})"
    elif [ -z "$peak" ] || [ "$peak" -gt "$MEMORY_BOUND_KIB" ]; then
        fail "attack: the host's peak resident memory ${peak:-?} KiB is over $MEMORY_BOUND_KIB KiB"
    else
        pass "attack: every guest's check held; the host peaked at $((peak / 1024)) MiB; $expired joins that never connected expired; dropped: $(echo "$drops" | sed 's/.*reason="\([a-z_]*\)"} \([0-9]*\)/\1 \2/' | paste -sd, -)"
        grep -m1 '^check: the host refused' "$WORK/attack.out" | grep -o 'sent .*' | cut -c1-600 | sed 's/^/  /'
    fi
fi

# 2. A guest whose process is killed.
if want vanish && start_host vanish 50320 '[]'; then
    watch_events vanish "$WORK/vanish.events"
    # Not under timeout: the kill must reach the guest itself (its --duration bounds it).
    "$TESSERA" load --url "$BASE" --room vanish --participants 1 --speakers 1 --duration 100s \
        --video 320x180@15 --report none --quiet >"$WORK/vanish.out" 2>&1 &
    victim=$!
    BACKGROUND+=("$victim")
    if ! wait_for 20 grep -q '"trackPublished".*"camera"\|"camera".*"trackPublished"' "$WORK/vanish.events"; then
        fail "vanish: the guest's camera was never published"; tail -n 5 "$WORK/vanish.events"
    else
        sleep 2
        kill -KILL "$victim"
        wait "$victim" 2>/dev/null
        killed=$(date +%s%N)
        if wait_for 40 grep -q 'consent lost' "$WORK/vanish.events"; then
            gone_ms=$(( ($(date +%s%N) - killed) / 1000000 ))
            peers=$(metric tessera_peers)
            if [ "$gone_ms" -gt 31000 ]; then
                fail "vanish: left with consent lost only $gone_ms ms after the kill (bound 30 s)"
            elif ! grep -q '"trackEnded"' "$WORK/vanish.events"; then
                fail "vanish: no trackEnded for the killed guest"
            elif [ "${peers:-1}" != 0 ]; then
                fail "vanish: $peers transports still open after the guest left"
            else
                pass "vanish: the killed guest left with consent lost $gone_ms ms after the kill; its tracks ended; no transport left"
            fi
        else
            fail "vanish: no left event with consent lost 40 s after the kill"; tail -n 8 "$WORK/vanish.events"
        fi
    fi
    stop_host
fi

# recording_start ROOM: POSTs a recording; sets FILE and START_NS (its time zero, Unix ns).
recording_start() {
    local answer
    answer=$(curl -s --max-time 10 -X POST -H 'Content-Type: application/json' -d '{}' "$BASE/v1/rooms/$1/recordings")
    FILE=$(echo "$answer" | python3 -c 'import json, sys; print(json.load(sys.stdin)["file"])' 2>/dev/null)
    START_NS=$(echo "$answer" | python3 -c '
import datetime, json, sys
start = json.load(sys.stdin)["start"]
print(int(datetime.datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1e9))' 2>/dev/null)
    [ -n "$FILE" ] && [ -n "$START_NS" ]
}

# guests ROOM SECONDS NAME: two guests in the background that check for SECONDS (their report in
# WORK/NAME.out), once both are in.
guests() {
    timeout -k 5 90 "$TESSERA" load --url "$BASE" --room "$1" --participants 2 --speakers 2 --duration "$2s" \
        --video 320x180@15 --report none --quiet >"$WORK/$3.out" 2>&1 &
    GUESTS=$!
    BACKGROUND+=("$GUESTS")
    wait_for 20 sh -c "[ \"\$(curl -s --max-time 2 '$BASE/metrics' | awk '\$1 == \"tessera_participants\" { print \$2 }')\" = 2 ]"
}

# 3. kill -9 while recording: the file plays to within 2 s of the kill.
if want crash && start_host crash 50330 '[]' ', "video": {"width": 640, "height": 360, "bitrate": 800000}'; then
    if guests crash 60 crash-guests && sleep 2 && recording_start crash; then
        sleep 8
        kill -KILL "$HOST_PID"
        killed=$(date +%s%N)
        wait "$HOST_PID" 2>/dev/null
        HOST_PID=
        kill "$GUESTS" 2>/dev/null
        expected_ms=$(( (killed - START_NS) / 1000000 ))
        last=$(ffprobe -v error -show_entries packet=pts_time -of csv=p=0 "$WORK/recordings/$FILE" 2>/dev/null | sort -g | tail -n 1)
        played_ms=$(python3 -c "print(int(float('${last:-0}') * 1000))")
        if [ "$played_ms" -ge $((expected_ms - 2000)) ]; then
            pass "crash: the file killed with its host plays $played_ms ms of the $expected_ms ms recorded"
        else
            fail "crash: the file plays $played_ms ms of the $expected_ms ms recorded before kill -9 (more than 2 s lost)"
        fi
    else
        fail "crash: the guests did not join or the recording did not start"
    fi
    stop_host
fi

# expect_stopped NAME ROOM REASON_PATTERN SETUP...: two guests check for 14 s while a recording
# runs; SETUP (a command) breaks its disk; the recording must stop with a reason matching the
# pattern, and the guests' checks hold.
expect_stopped() {
    local name=$1 room=$2 pattern=$3; shift 3
    watch_events "$room" "$WORK/$name.events"
    if ! { guests "$room" 14 "$name-guests" && recording_start "$room"; }; then
        fail "$name: the guests did not join or the recording did not start"; return
    fi
    "$@"
    if wait_for 15 grep -q "\"recordingStopped\".*$pattern\|$pattern.*\"recordingStopped\"" "$WORK/$name.events"; then
        wait "$GUESTS"
        local rc=$?
        if [ "$rc" -eq 0 ]; then
            pass "$name: $(grep recordingStopped "$WORK/$name.events" | grep -o '"reason":"[^"]*"' | tail -n 1); the guests' checks held"
        else
            fail "$name: the recording stopped, but the guests' checks failed (exit $rc)"; grep -E '^(check|load):' "$WORK/$name-guests.out"
        fi
    else
        fail "$name: no recordingStopped matching $pattern"; tail -n 6 "$WORK/$name.events"
    fi
}

# 4. A full disk: the recordings folder is a 256 KiB tmpfs in the host's own mount namespace.
mkdir -p "$WORK/small-disk"
HOST_PREFIX=(unshare -m sh -c 'mount -t tmpfs -o size=256k tessera-full "$0" && exec "$@"' "$WORK/small-disk")
if want full-disk && RECORDINGS=$WORK/small-disk start_host full-disk 50340 '[]'; then
    expect_stopped full-disk full-disk 'space' true
    stop_host
fi
HOST_PREFIX=()

# 5. The recordings folder removed while recording.
mkdir -p "$WORK/removed"
if want removed && RECORDINGS=$WORK/removed start_host removed 50350 '[]'; then
    expect_stopped removed removed 'was removed' rm -rf "$WORK/removed"
    stop_host
fi

[ "$failures" -eq 0 ]
