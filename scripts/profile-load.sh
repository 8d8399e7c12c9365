#!/usr/bin/env bash
# Where a loaded host's time goes: a release `tessera serve` on a fresh default config (limits
# raised for big rooms), one `tessera load` against it with the arguments given, and `perf record`
# of the host (call graphs by frame pointer, 999 Hz) over RECORD_SECONDS (12) from DELAY (16) seconds
# after the load starts: pick the delay past the joins (participants / join rate + 2 s), so that
# the profile is the steady window the load's figures come from. Prints the load's last line,
# the functions with the most samples of their own and under them, and leaves perf.data and the
# stacks in WORK (/tmp/tessera-profile) for `scripts/perf-stacks.py`'s callers and callees.
#   scripts/profile-load.sh --participants 500 --speakers 3 --video off --join-rate 40 --duration 30s
#   scripts/perf-stacks.py /tmp/tessera-profile/stacks.txt callees 'Room.audioTick'
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_test
ensure_debian_packages linux-perf

source "$(dirname "${BASH_SOURCE[0]}")/bench-host.sh"
in_loopback_namespace "$0" "$@"

cd "$TESSERA_ROOT"
WORK=${WORK:-/tmp/tessera-profile}
DELAY=${DELAY:-16}
RECORD_SECONDS=${RECORD_SECONDS:-12}
mkdir -p "$WORK"
trap stop_host EXIT
start_host "$WORK" ', "limits": {"maxParticipantsPerRoom": 2000}'
"${TESSERA_BIN:-$TESSERA_ROOT/.build/release/tessera}" load --url "$BASE" --quiet --report "$WORK/load" "$@" >"$WORK/load.out" 2>&1 &
LOAD_PID=$!
sleep "$DELAY"
perf record -F 999 --call-graph fp -p "$HOST_PID" -o "$WORK/perf.data" -- sleep "$RECORD_SECONDS" >/dev/null 2>&1
wait "$LOAD_PID" || true
stop_host
perf script -i "$WORK/perf.data" 2>/dev/null >"$WORK/stacks.txt"
grep -E '^load: ' "$WORK/load.out" | tail -n 1
echo "== self (top 40)"
python3 scripts/perf-stacks.py "$WORK/stacks.txt" self 40
echo "== inclusive (top 60)"
python3 scripts/perf-stacks.py "$WORK/stacks.txt" inclusive 60
