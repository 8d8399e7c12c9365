#!/bin/sh
# Re-capture the real SDP offers used as fixtures in Tests/SDPTests/Fixtures.
# Run as root:  Interop/capture-offers/capture.sh [chromium|chromium-screenshare|firefox|aiortc|gstreamer ...]
# Every peer runs in a private network namespace holding only `lo`, under a timeout.
# A fixture is replaced only when its peer produced an offer.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT="$REPO/Tests/SDPTests/Fixtures"
VENV="$REPO/.venv"
PEERS=${*:-chromium chromium-screenshare firefox aiortc gstreamer}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}

APT_PKGS="chromium firefox-esr iproute2 python3-venv \
 gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
 gstreamer1.0-nice python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 \
 gir1.2-gst-plugins-bad-1.0 gir1.2-nice-0.1"

missing=""
for p in $APT_PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "== apt-get install$missing"
  export DEBIAN_FRONTEND=noninteractive
  timeout 900 apt-get install -y -q $missing || { timeout 300 apt-get update -q && timeout 900 apt-get install -y -q $missing; } || exit 1
fi
if ! "$VENV/bin/python" -c 'import aiortc, numpy' 2>/dev/null; then
  echo "== venv $VENV: pip install aiortc numpy"
  [ -x "$VENV/bin/python" ] || timeout 300 python3 -m venv "$VENV" || exit 1
  timeout 600 "$VENV/bin/pip" install -q aiortc numpy || exit 1
fi

mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/capture-offers.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# run_isolated CMD...: run CMD in a new network namespace with only lo up.
run_isolated() {
  timeout -k 10 "$STEP_TIMEOUT" unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
}

failed=""
for peer in $PEERS; do
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
    *) echo "unknown peer: $peer" >&2; failed="$failed $peer"; continue ;;
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
/usr/bin/chromium --version 2>/dev/null
/usr/bin/firefox-esr --version 2>/dev/null
"$VENV/bin/pip" list 2>/dev/null | grep -iE '^(aiortc|aioice) '
/usr/bin/python3 -c 'import gi; gi.require_version("Gst","1.0"); from gi.repository import Gst; Gst.init(None); print(Gst.version_string())'
dpkg-query -W -f='libnice ${Version}\n' libnice10 2>/dev/null

if [ -n "$failed" ]; then echo "failed:$failed" >&2; exit 1; fi
echo "all offers written to $OUT"
