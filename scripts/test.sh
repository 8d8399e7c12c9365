#!/usr/bin/env bash
# Installs what the tests need, builds, and runs every test: the unit tests (seconds), then the
# end-to-end steps. Network tests run in a private network namespace that holds only loopback.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_test
cd "$TESSERA_ROOT"

# Runs a command where only 127.0.0.1 exists, when this user may make a namespace.
on_loopback_only() {
    if unshare -n true 2>/dev/null; then
        unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
    else
        echo "test: cannot make a network namespace here; running on the host's loopback" >&2
        "$@"
    fi
}

echo "== build"
swift build --build-tests

echo "== unit tests"
on_loopback_only swift test --skip-build

echo "== interop: real peers (aiortc, Chromium, GStreamer) against tessera serve"
Interop/run.sh --tessera .build/debug/tessera

echo "== interop under loss: the aiortc room and the page in Chromium with 5 % loss and 0-50 ms jitter on the host's media socket"
Interop/run.sh --tessera .build/debug/tessera --peers "room page" --impair '{"loss": 0.05, "jitter": "50ms"}'

echo "== cluster: redis-server and three hosts: placement, 307 redirects (aiortc follows one; a recording fetched at another host), racing first joins, drain, kill -9 failover, tessera load --rejoin and the page rejoining through a kill -9, Redis stopped and back; then an owner and two edge hosts serving viewers (the cascade); then two hosts with auth on and the page joining across them with its token"
Interop/cluster_check.sh --tessera .build/debug/tessera

# The soak's 2-minute version (scripts/soak.sh 30m is the real one): a debug host on 2 cores holds
# 8 guests with video under churn, so CI runs 8; the 30-minute figures are from release builds.
echo "== soak: 2 minutes of churn (8 guests joining and leaving, audio and video): memory, threads and files"
scripts/soak.sh 2m --tessera .build/debug/tessera --participants 8 --video 160x90@10
