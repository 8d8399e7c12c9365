#!/usr/bin/env bash
# Interop suite for the host's echo endpoint (POST /v1/echo): real WebRTC peers call it and
# check that what they send comes back.
#
#   Interop/run.sh [--tessera PATH] [--peers "aiortc chromium chromium-tcp gstreamer page meeting room remb load faults docs"] [--seconds N]
#                  [--media-port 50000] [--ready-timeout 30] [--keep-logs] [--impair JSON]
#
# --impair '{"loss": 0.05, "jitter": "50ms"}' impairs the host's media socket (config
# testing.impair): the peers meet that network, both ways.
#
# Everything runs inside a private network namespace that holds only loopback (the script
# re-executes itself under `unshare -n`), so nothing leaves the machine and no port clashes
# with the outside. In there it starts `PATH serve --config TMP.json` (default: the newer of
# .build/release/tessera and .build/debug/tessera; any executable that takes `serve --config FILE` and prints the ready
# line will do), with HTTP on 127.0.0.1:0 and media on 127.0.0.1:MEDIA_PORT announcing
# 127.0.0.1; waits (bounded) for `tessera: listening on http://127.0.0.1:PORT`; runs each peer
# test against http://127.0.0.1:PORT/v1/echo, one after the other, each under a timeout;
# stops the host with SIGTERM and checks that it exits 0 (itself a test). The last line is
# `interop: N passed, N failed`; the exit status is non-zero when anything failed.
#
# It installs nothing: scripts/setup.sh (setup_test) provides .venv with Interop/requirements.txt
# and the Debian packages (chromium; gstreamer + python3-gi for the gstreamer peer). A peer
# whose tools are missing counts as failed, with the reason.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# The release build when it is newer than the debug one or the debug one is missing.
TESSERA="$REPO/.build/debug/tessera"
if [ -x "$REPO/.build/release/tessera" ] && { [ ! -x "$TESSERA" ] || [ "$REPO/.build/release/tessera" -nt "$TESSERA" ]; }; then
    TESSERA="$REPO/.build/release/tessera"
fi
PEERS="aiortc chromium chromium-tcp gstreamer page meeting room remb load faults docs"
SECONDS_PER_CALL=10
MEDIA_PORT=50000
READY_TIMEOUT=30
KEEP_LOGS=0
IMPAIR=
VENV_PY="$REPO/.venv/bin/python"
SYS_PY=/usr/bin/python3

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
orig_args=("$@")
while [ $# -gt 0 ]; do
    case $1 in
        --tessera) TESSERA=$2; shift 2 ;;
        --peers) PEERS=$2; shift 2 ;;
        --seconds) SECONDS_PER_CALL=$2; shift 2 ;;
        --media-port) MEDIA_PORT=$2; shift 2 ;;
        --ready-timeout) READY_TIMEOUT=$2; shift 2 ;;
        --keep-logs) KEEP_LOGS=1; shift ;;
        --impair) IMPAIR=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "interop: unknown argument $1" >&2; usage ;;
    esac
done

# Re-execute inside a loopback-only network namespace (root: unshare -n; otherwise a user
# namespace maps us to root for that).
if [ -z "${TESSERA_INTEROP_NETNS:-}" ]; then
    command -v unshare >/dev/null && command -v ip >/dev/null || {
        echo "interop: need unshare (util-linux) and ip (iproute2)" >&2
        echo "interop: 0 passed, 1 failed"; exit 1; }
    flags=-n; [ "$(id -u)" -eq 0 ] || flags=-rn
    TESSERA_INTEROP_NETNS=1 exec unshare $flags sh -c 'ip link set lo up && exec "$@"' sh "$0" "${orig_args[@]}"
    echo "interop: cannot enter a network namespace" >&2
    echo "interop: 0 passed, 1 failed"; exit 1
fi

passed=0
failed=0
results=()
pass() { passed=$((passed + 1)); results+=("PASS $1"); echo "interop: PASS $1"; }
fail() { failed=$((failed + 1)); results+=("FAIL $1${2:+: $2}"); echo "interop: FAIL $1${2:+: $2}"; }

TMP=$(mktemp -d /tmp/tessera-interop.XXXXXX)
HOST_PID=
cleanup() {
    if [ -n "$HOST_PID" ] && kill -0 "$HOST_PID" 2>/dev/null; then
        kill -KILL -- "-$HOST_PID" 2>/dev/null || kill -KILL "$HOST_PID" 2>/dev/null
        wait "$HOST_PID" 2>/dev/null
    fi
    if [ "$KEEP_LOGS" = 1 ]; then echo "interop: logs kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
    echo "interop: summary"
    for r in "${results[@]}"; do echo "  $r"; done
    echo "interop: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

host_tail() {
    echo "--- host output (tail) ---"
    tail -n 40 "$TMP/host.log" 2>/dev/null
    echo "---"
}

# --- start the host --------------------------------------------------------------------
TESTING_JSON=
[ -z "$IMPAIR" ] || TESTING_JSON=", \"testing\": {\"impair\": $IMPAIR}"
cat >"$TMP/config.json" <<EOF
{"http": {"listen": "127.0.0.1:0"}, "media": {"listen": "127.0.0.1:$MEDIA_PORT", "announce": ["127.0.0.1"]},
 "recordings": {"folder": "$TMP/recordings"}$TESTING_JSON}
EOF
if [ ! -x "$TESSERA" ]; then
    fail host "no executable at $TESSERA (build it: swift build)"
    finish
fi
echo "interop: starting $TESSERA serve --config $TMP/config.json (media 127.0.0.1:$MEDIA_PORT)"
: >"$TMP/host.log"
# Its own process group (setsid), so that cleanup can kill whatever it started too.
setsid "$TESSERA" serve --config "$TMP/config.json" >"$TMP/host.log" 2>&1 </dev/null &
HOST_PID=$!
BASE=
deadline=$((SECONDS + READY_TIMEOUT))
while [ $SECONDS -lt $deadline ]; do
    BASE=$(sed -n 's#^.*tessera: listening on \(http://[^[:space:]]*\).*$#\1#p' "$TMP/host.log" 2>/dev/null | head -n 1)
    [ -n "$BASE" ] && break
    kill -0 "$HOST_PID" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$BASE" ]; then
    if kill -0 "$HOST_PID" 2>/dev/null; then
        fail host "no ready line within ${READY_TIMEOUT}s"
    else
        wait "$HOST_PID"; fail host "exited with status $? before its ready line"
    fi
    host_tail
    finish
fi
BASE=${BASE%/}
URL="$BASE/v1/echo"
echo "interop: host ready at $BASE"

# --- peers -----------------------------------------------------------------------------
# run_peer NAME CMD...: runs one peer test under a timeout (PEER_LIMIT seconds, or the call's
# seconds plus 45), shows its JSON line and failures.
run_peer() {
    local name=$1; shift
    local limit=${PEER_LIMIT:-$((${SECONDS_PER_CALL%.*} + 45))}
    echo "interop: running $name"
    timeout -k 5 "$limit" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
    local rc=$?
    cat "$TMP/$name.out"
    if [ $rc -eq 0 ]; then
        grep -v -e '^ALSA lib' -e 'dbus' "$TMP/$name.err" | grep -e 'PASS' -e 'WARN' || true
        pass "$name"
    else
        grep -v -e '^ALSA lib' -e 'dbus' "$TMP/$name.err" | tail -n 40
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then fail "$name" "killed after ${limit}s"; else fail "$name" "exit $rc"; fi
    fi
    if ! kill -0 "$HOST_PID" 2>/dev/null; then
        fail host "died during the $name test"
        host_tail
        HOST_PID=
        finish
    fi
}

for peer in $PEERS; do
    case $peer in
        aiortc)
            if ! "$VENV_PY" -c 'import aiortc, numpy' 2>/dev/null; then
                fail aiortc "no aiortc in $REPO/.venv (run scripts/setup.sh)"; continue
            fi
            run_peer aiortc "$VENV_PY" "$HERE/echo_aiortc.py" --url "$URL" --seconds "$SECONDS_PER_CALL" \
                --tone 440 --color ff00ff --expect-profile SRTP_AEAD_AES_128_GCM ;;
        chromium)
            if ! command -v chromium >/dev/null; then
                fail chromium "chromium is not installed (Debian package chromium)"; continue
            fi
            run_peer chromium "$SYS_PY" "$HERE/echo_chromium.py" --url "$URL" --seconds "$SECONDS_PER_CALL" \
                --tone 660 --expect-cipher AEAD_AES_128_GCM ;;
        chromium-tcp)
            if ! command -v chromium >/dev/null; then
                fail chromium-tcp "chromium is not installed (Debian package chromium)"; continue
            fi
            # the same echo, but the page drops the host's UDP candidates from the answer: only
            # ICE-TCP (RFC 6544) is left, as for a guest whose network blocks UDP
            run_peer chromium-tcp "$SYS_PY" "$HERE/echo_chromium.py" --url "$URL" --seconds "$SECONDS_PER_CALL" \
                --tone 660 --expect-cipher AEAD_AES_128_GCM --tcp-only ;;
        gstreamer)
            if [ ! -f "$HERE/echo_gstreamer.py" ]; then
                fail gstreamer "Interop/echo_gstreamer.py is missing"; continue
            fi
            if ! "$SYS_PY" -c 'import gi; gi.require_version("Gst", "1.0"); gi.require_version("GstWebRTC", "1.0"); gi.require_version("Nice", "0.1")' 2>/dev/null; then
                fail gstreamer "GStreamer webrtcbin / python3-gi / gir1.2-nice-0.1 not installed"; continue
            fi
            run_peer gstreamer "$SYS_PY" "$HERE/echo_gstreamer.py" --url "$URL" --seconds "$SECONDS_PER_CALL" \
                --tone 550 --expect-profile SRTP_AES128_CM_SHA1_80
            # the same peer in a room, muted with Opus DTX and no RFC 6464 levels: the host
            # must take its frames of no bytes as silence, not decode them
            run_peer gstreamer-dtx "$SYS_PY" "$HERE/echo_gstreamer.py" --dtx --seconds "$SECONDS_PER_CALL" \
                --url "$BASE/v1/rooms/interop-dtx/participants?identity=gst" --expect-profile SRTP_AES128_CM_SHA1_80 ;;
        page)
            if ! command -v chromium >/dev/null; then
                fail page "chromium is not installed (Debian package chromium)"; continue
            fi
            if ! "$VENV_PY" -c 'import aiortc, numpy' 2>/dev/null; then
                fail page "no aiortc in $REPO/.venv (run scripts/setup.sh)"; continue
            fi
            # the page in headless Chromium + two aiortc participants in one room; the page's
            # own self-check (window.tessera.selfCheck) says what it decodes and hears
            PEER_LIMIT=130 run_peer page "$VENV_PY" "$HERE/page_chromium.py" --url "$BASE" --room page-test --timeout 120 ;;
        meeting)
            if ! command -v chromium >/dev/null; then
                fail meeting "chromium is not installed (Debian package chromium)"; continue
            fi
            if ! "$VENV_PY" -c 'import aiortc, numpy' 2>/dev/null; then
                fail meeting "no aiortc in $REPO/.venv (run scripts/setup.sh)"; continue
            fi
            # the page as a meeting client: two pages in headless Chromium and an aiortc guest,
            # driven through every control; then a host of its own with auth for the refusals
            # (TESSERA_SCREENSHOTS=DIR saves the page at desktop and phone width there)
            PEER_LIMIT=200 run_peer meeting "$VENV_PY" "$HERE/meeting_chromium.py" --url "$BASE" --tessera "$TESSERA" \
                --media-port $((MEDIA_PORT + 2)) --timeout 180 ${TESSERA_SCREENSHOTS:+--screenshots "$TESSERA_SCREENSHOTS"} ;;
        room)
            if ! "$VENV_PY" -c 'import aiortc, numpy' 2>/dev/null; then
                fail room "no aiortc in $REPO/.venv (run scripts/setup.sh)"; continue
            fi
            # three participants in one room; a recording lands in the host's cwd (ours) + recordings/
            run_peer room "$VENV_PY" "$HERE/room_aiortc.py" --url "$BASE" --room interop --timeout 50 \
                --recordings-dir "$TMP/recordings" ;;
        remb)
            if ! "$VENV_PY" -c 'import aiortc, numpy' 2>/dev/null; then
                fail remb "no aiortc in $REPO/.venv (run scripts/setup.sh)"; continue
            fi
            # the host caps a camera with REMB at its tile's needs: aiortc alone in a room, then
            # with 4 more (a grid of 5: a 427x360 tile, 369 kbit/s); its bitrate before and after
            run_peer remb "$VENV_PY" "$HERE/remb_aiortc.py" --url "$BASE" --room remb --timeout 60 ;;
        docs)
            # the examples of docs/api.md and docs/config.md, against hosts of its own on the
            # default ports, in a network namespace of their own
            PEER_LIMIT=240 run_peer docs unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
                "$SYS_PY" "$HERE/docs_check.py" --tessera "$TESSERA" --work "$TMP/docs" ;;
        load)
            # tessera load against hosts of its own (a sound one, two deliberately broken ones)
            PEER_LIMIT=180 run_peer load bash "$HERE/load_check.sh" "$TESSERA" "$TMP/load" ;;
        faults)
            # The host attacked, a guest killed, the host killed while recording, a full disk and a
            # removed recordings folder, each with a room in session (hosts of its own)
            PEER_LIMIT=240 run_peer faults bash "$HERE/faults_check.sh" "$TESSERA" "$TMP/faults" ;;
        *) fail "$peer" "unknown peer (aiortc, chromium, chromium-tcp, gstreamer, page, room, remb, load, faults, docs)" ;;
    esac
done

# --- stop the host ---------------------------------------------------------------------
kill -TERM "$HOST_PID" 2>/dev/null
for _ in $(seq 100); do kill -0 "$HOST_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$HOST_PID" 2>/dev/null; then
    fail host-shutdown "still running 10s after SIGTERM"
    host_tail
else
    wait "$HOST_PID"; rc=$?
    HOST_PID=
    if [ $rc -eq 0 ]; then pass host-shutdown; else fail host-shutdown "exit status $rc after SIGTERM"; host_tail; fi
fi
finish
