#!/usr/bin/env bash
# Captures real SDP offers from WebRTC peers on this machine: the SDP tests' fixtures.
#
#   Interop/capture-offers/capture.sh [--update-fixtures] [--out DIR] [PEER...]
#
# PEERs: chromium chromium-screenshare firefox aiortc gstreamer (all when none is named).
# Offers go to a scratch folder (printed at the end; --out DIR to choose it). With
# --update-fixtures they replace the fixtures in Tests/SDPTests/Fixtures instead, and the golden
# answers are regenerated from them (SDP_RECORD_GOLDEN=1 swift test --filter SDPTests): review
# `git diff Tests/SDPTests` before committing. Installs, through scripts/setup.sh, only what the
# named peers need (as root). Every peer runs in a private network namespace holding only `lo`,
# under a timeout (STEP_TIMEOUT, default 120 s); a fixture is replaced only when its peer
# produced an offer.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../../scripts/setup.sh"
REPO=$TESSERA_ROOT
FIXTURES="$REPO/Tests/SDPTests/Fixtures"
VENV="$REPO/.venv"
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
UPDATE=0
OUT=
PEERS=()
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --update-fixtures) UPDATE=1; shift ;;
        --out) OUT=${2:?--out needs a folder}; shift 2 ;;
        --out=*) OUT=${1#--out=}; shift ;;
        -h|--help) usage ;;
        chromium|chromium-screenshare|firefox|aiortc|gstreamer) PEERS+=("$1"); shift ;;
        *) echo "capture: unknown argument $1" >&2; usage ;;
    esac
done
[ ${#PEERS[@]} -gt 0 ] || PEERS=(chromium chromium-screenshare firefox aiortc gstreamer)
if [ "$UPDATE" = 1 ]; then OUT=$FIXTURES; elif [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/tessera-offers.XXXXXX); fi
mkdir -p "$OUT"

# What each peer needs, and nothing more.
needs=(iproute2 util-linux)
for peer in "${PEERS[@]}"; do
    case $peer in
        chromium|chromium-screenshare) needs+=(chromium python3) ;;
        firefox) needs+=(firefox-esr python3) ;;
        aiortc) needs+=(python3 python3-venv) ;;
        gstreamer) needs+=(python3 gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
            gstreamer1.0-plugins-bad gstreamer1.0-nice python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
            gir1.2-gst-plugins-bad-1.0 gir1.2-nice-0.1) ;;
    esac
done
ensure_debian_packages "${needs[@]}" || exit 1
case " ${PEERS[*]} " in *" aiortc "*) ensure_python_venv || exit 1 ;; esac

TMP=$(mktemp -d /tmp/capture-offers.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# run_isolated CMD...: run CMD in a new network namespace with only lo up.
run_isolated() {
    timeout -k 10 "$STEP_TIMEOUT" unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
}

failed=""
for peer in "${PEERS[@]}"; do
    case $peer in
        chromium)             file=chromium-offer.sdp
                              set -- /usr/bin/python3 "$HERE/browser_offer.py" chromium --out "$TMP/$file" ;;
        chromium-screenshare) file=chromium-offer-screenshare.sdp
                              set -- /usr/bin/python3 "$HERE/browser_offer.py" chromium --mode screenshare --out "$TMP/$file" ;;
        firefox)              file=firefox-offer.sdp  # gathers nothing on loopback: bounded 8 s wait
                              set -- /usr/bin/python3 "$HERE/browser_offer.py" firefox --gather-ms 8000 --out "$TMP/$file" ;;
        aiortc)               file=aiortc-offer.sdp
                              set -- "$VENV/bin/python" "$HERE/aiortc_offer.py" "$TMP/$file" ;;
        gstreamer)            file=gstreamer-offer.sdp
                              set -- /usr/bin/python3 "$HERE/gstreamer_offer.py" "$TMP/$file" 10 ;;
    esac
    echo "== $peer"
    if run_isolated "$@" && [ -s "$TMP/$file" ]; then
        cp "$TMP/$file" "$OUT/$file"
    else
        echo "!! $peer: no offer captured" >&2
        failed="$failed $peer"
    fi
done

echo "== versions"
for peer in "${PEERS[@]}"; do
    case $peer in
        chromium) /usr/bin/chromium --version 2>/dev/null ;;
        firefox) /usr/bin/firefox-esr --version 2>/dev/null ;;
        aiortc) "$VENV/bin/pip" list 2>/dev/null | grep -iE '^(aiortc|aioice) ' ;;
        gstreamer)
            /usr/bin/python3 -c 'import gi; gi.require_version("Gst","1.0"); from gi.repository import Gst; Gst.init(None); print(Gst.version_string())'
            dpkg-query -W -f='libnice ${Version}\n' libnice10 2>/dev/null ;;
    esac
done

if [ "$UPDATE" = 1 ]; then
    echo "== regenerating the golden answers from the new offers"
    (cd "$REPO" && SDP_RECORD_GOLDEN=1 swift test --filter SDPTests >/dev/null 2>&1)
    echo "review: git diff Tests/SDPTests (tests that pin an offer's SSRCs or credentials name them)"
fi
if [ -n "$failed" ]; then echo "failed:$failed" >&2; exit 1; fi
echo "offers written to $OUT"
