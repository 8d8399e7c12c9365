# Hosts for the checks that start their own (load_check.sh, faults_check.sh): sourced, with
# TESSERA and WORK set. Each host gets its config in WORK, HTTP on 127.0.0.1:0 and its own media
# port; its recordings go to RECORDINGS (default WORK/recordings); HOST_PREFIX (words) runs
# before it, as `unshare -m sh -c '…'` does for a host that needs a mount of its own.
HOST_PID=
HOST_PREFIX=()

start_host() {  # start_host NAME MEDIA_PORT FAULTS_JSON [MORE_CONFIG] → sets BASE and HOST_PID
    local name=$1 port=$2 faults=$3 more=${4:-}
    cat >"$WORK/$name.json" <<JSON
{"http": {"listen": "127.0.0.1:0"}, "media": {"listen": "127.0.0.1:$port"},
 "recordings": {"folder": "${RECORDINGS:-$WORK/recordings}"}, "testing": {"faults": $faults}$more}
JSON
    setsid "${HOST_PREFIX[@]}" "$TESSERA" serve --config "$WORK/$name.json" >"$WORK/$name.host.log" 2>&1 </dev/null &
    HOST_PID=$!
    BASE=
    for _ in $(seq 300); do
        BASE=$(sed -n 's#^.*tessera: listening on \(http://[^[:space:]]*\).*$#\1#p' "$WORK/$name.host.log" | head -n 1)
        [ -n "$BASE" ] && return 0
        kill -0 "$HOST_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "$(basename "$0" .sh): FAIL $name: the host did not start"; tail -n 20 "$WORK/$name.host.log"
    return 1
}

stop_host() {
    [ -n "$HOST_PID" ] || return 0
    kill -TERM "$HOST_PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$HOST_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$HOST_PID" 2>/dev/null
    wait "$HOST_PID" 2>/dev/null
    HOST_PID=
}

# run_load NAME ARGS...: runs tessera load against $BASE; its output in WORK/NAME.out, status in RC.
run_load() {
    local name=$1; shift
    timeout -k 5 90 "$TESSERA" load --url "$BASE" --quiet --report "$WORK/$name-report" "$@" >"$WORK/$name.out" 2>&1
    RC=$?
}

# wait_for SECONDS COMMAND...: runs COMMAND every 0.2 s until it succeeds; false after SECONDS.
wait_for() {
    local deadline=$(( $(date +%s) + $1 )); shift
    until "$@"; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# metric NAME: the host's /metrics value of NAME (with its labels), or nothing.
metric() { curl -s --max-time 5 "$BASE/metrics" | awk -v name="$1" '$1 == name { print $2 }'; }
