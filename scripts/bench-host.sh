# Shared by the benchmark scripts (sourced, not run): re-runs the caller inside a loopback-only
# network namespace with a release build, and starts and stops a fresh `tessera serve`.
#   in_loopback_namespace "$0" "$@"     at the top of a script (after sourcing setup.sh)
#   start_host WORK [EXTRA_JSON]        a host on 127.0.0.1 (media on 50000); sets HOST_PID, BASE
#                                       (HTTP_EXTRA adds fields to its "http" block)
#   stop_host                           SIGTERM, then SIGKILL after 10 s (stop_pid PID: the same for
#                                       another child)
# TESSERA_BIN runs another build of tessera than .build/release's (a copy of an earlier commit's,
# for before/after tables on one machine at one time).
in_loopback_namespace() {
    [ -z "${TESSERA_BENCH_NETNS:-}" ] || return 0
    cd "$TESSERA_ROOT"
    swift build -c release --product tessera >/dev/null
    local flags=-n; [ "$(id -u)" -eq 0 ] || flags=-rn
    TESSERA_BENCH_NETNS=1 exec unshare $flags sh -c 'ip link set lo up && exec "$@"' sh "$@"
}

HOST_PID=
BASE=
start_host() {
    local work=$1 extra=${2:-}
    cat >"$work/host.json" <<EOF
{"http": {"listen": "127.0.0.1:0"${HTTP_EXTRA:-}}, "media": {"listen": "127.0.0.1:50000"}, "recordings": {"folder": "$work/recordings"}$extra}
EOF
    "${TESSERA_BIN:-$TESSERA_ROOT/.build/release/tessera}" serve --config "$work/host.json" >"$work/host.log" 2>&1 </dev/null &
    HOST_PID=$!
    BASE=
    for _ in $(seq 100); do
        BASE=$(sed -n 's#^.*tessera: listening on \(http://[^[:space:]]*\).*$#\1#p' "$work/host.log" | head -n 1)
        [ -n "$BASE" ] && break
        sleep 0.1
    done
}

stop_host() {
    [ -n "$HOST_PID" ] || return 0
    stop_pid "$HOST_PID"
    HOST_PID=
}

# SIGTERM to a child of this shell, SIGKILL after 10 s, and waits for it.
stop_pid() {
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
