#!/usr/bin/env bash
# The cluster end to end (docs/cluster.md): redis-server and three `tessera serve` hosts on
# 127.0.0.1, in a private network namespace that holds only loopback (this script re-executes
# itself under `unshare -n`), checked by Interop/cluster_check.py.
#
#   Interop/cluster_check.sh [--tessera PATH]
#
# Installs nothing: scripts/setup.sh (setup_test) provides redis-server and .venv (aiortc).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
if [ -z "${TESSERA_CLUSTER_NETNS:-}" ]; then
    command -v unshare >/dev/null && command -v ip >/dev/null || { echo "cluster: need unshare (util-linux) and ip (iproute2)" >&2; exit 1; }
    flags=-n; [ "$(id -u)" -eq 0 ] || flags=-rn
    TESSERA_CLUSTER_NETNS=1 exec unshare $flags sh -c 'ip link set lo up && exec "$@"' sh "$0" "$@"
    echo "cluster: cannot enter a network namespace" >&2
    exit 1
fi
command -v redis-server >/dev/null || { echo "cluster: redis-server is missing (scripts/setup.sh test installs it)"; echo "cluster: 0 passed, 1 failed"; exit 1; }
PYTHON="$REPO/.venv/bin/python"
[ -x "$PYTHON" ] || PYTHON=python3
# Bounded: the checks wait at most about 3 minutes in all.
exec timeout 420 "$PYTHON" "$HERE/cluster_check.py" "$@"
