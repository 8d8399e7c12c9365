#!/usr/bin/env python3
"""Interop: the host caps a camera with REMB at what its tile needs, and aiortc follows.

One aiortc participant ("cam") joins room --room alone, sending video only (sendonly VP8, a gradient
under faint noise, so that its encoder spends what it is allowed): its tile is the whole 1280x720
canvas at 30 fps, so the host's REMB says 1280*720*30*0.08 = 2.2 Mbit/s and aiortc's VP8 encoder
runs at its own ceiling (1.5 Mbit/s; it clamps REMB to 250 kbit/s..1.5 Mbit/s, default 500 kbit/s).
Then --fillers more participants join (audio only, receive only: a tile each, placeholders): with
5 in a grid (3 columns, 2 rows) cam's tile is 427x360, so the cap is 427*360*30*0.08 = 369 kbit/s.
Checks, each bounded:

  join     cam's POST answered 201 with goog-remb on its video m-line, DTLS connected
  before   cam's outbound-rtp bitrate (getStats bytesSent over --measure seconds) is above 500 kbit/s
  metric   after the fillers joined, /metrics says tessera_camera_bitrate_cap_bits == the cap
  after    cam's bitrate over --measure seconds is under 450 kbit/s (below aiortc's default, toward the cap)

Prints one JSON line of measurements on stdout (before and after in bit/s); exit 0 only when every
check passed, otherwise 1 with `remb_aiortc: FAIL <check>: <detail>` lines on stderr.

usage: remb_aiortc.py --url http://127.0.0.1:PORT [--room remb] [--fillers 4] [--timeout 60]
"""
import argparse, asyncio, fractions, json, os, re, sys, time, urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import echo_aiortc as E   # noqa: E402  (patches aioice's host addresses to 127.0.0.1)

import numpy as np   # noqa: E402
from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription   # noqa: E402
from aiortc.mediastreams import MediaStreamTrack   # noqa: E402
from av import VideoFrame   # noqa: E402

CANVAS_W, CANVAS_H, FPS, BITS_PER_PIXEL = 1280, 720, 30, 0.08


def grid_tile(count):
    """The tile of a grid preset of `count` (LayoutPreset.grid), in canvas pixels."""
    columns = 1
    while columns * columns < count:
        columns += 1
    rows = (count + columns - 1) // columns
    return round(CANVAS_W / columns), round(CANVAS_H / rows)


def cap_for(count):
    w, h = grid_tile(count)
    return int(min(2_500_000, max(100_000, w * h * FPS * BITS_PER_PIXEL)))


class NoiseTrack(MediaStreamTrack):
    """A gradient under fresh faint noise (+-8 levels): its encoder spends what its target allows
    (aiortc's VP8 measured 1.49 Mbit/s at 1.5 M, 495 k at 500 k, 372 k at 369 k offline). Full-range
    noise would not do: at the largest quantizer it still takes 2 Mbit/s, whatever the target."""
    kind = "video"

    def __init__(self, width=320, height=240, fps=30, amplitude=8):
        super().__init__()
        self.width, self.height, self.fps, self.amplitude = width, height, fps, amplitude
        self._rng = np.random.default_rng(7)
        self._base = np.zeros((height, width, 3), np.int16)
        self._base[:, :, 0] = np.linspace(0, 255, width)[None, :]
        self._base[:, :, 1] = np.linspace(0, 255, height)[:, None]
        self._n = 0
        self._start = None

    async def recv(self):
        if self._start is None:
            self._start = time.monotonic()
        delay = self._start + self._n / self.fps - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        noise = self._rng.integers(-self.amplitude, self.amplitude + 1, (self.height, self.width, 1), dtype=np.int16)
        img = np.clip(self._base + noise, 0, 255).astype(np.uint8)
        frame = VideoFrame.from_ndarray(img, format="rgb24")
        frame.pts = int(self._n * 90000 / self.fps)
        frame.time_base = fractions.Fraction(1, 90000)
        self._n += 1
        return frame


async def join(url, room, identity, video):
    """POSTs an offer: video sendonly (noise) or audio recvonly. Returns (pc, location, answer) or raises."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    if video:
        t = pc.addTransceiver(NoiseTrack(), direction="sendonly")
        t.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType.lower() == "video/vp8"])
    else:
        pc.addTransceiver("audio", direction="recvonly")
    connected = asyncio.Event()

    @pc.on("connectionstatechange")
    def _():
        if pc.connectionState in ("connected", "failed"):
            connected.set()

    await asyncio.wait_for(pc.setLocalDescription(await pc.createOffer()), 10)
    post = "%s/v1/rooms/%s/participants?identity=%s" % (url, urllib.parse.quote(room), identity)
    status, ctype, location, body = await asyncio.to_thread(E.post_offer, post, pc.localDescription.sdp, 5)
    if status != 201:
        raise RuntimeError("%s: POST want 201, got %s: %s" % (identity, status, body[:300]))
    await asyncio.wait_for(pc.setRemoteDescription(RTCSessionDescription(body, "answer")), 5)
    await asyncio.wait_for(connected.wait(), 10)
    if pc.connectionState != "connected":
        raise RuntimeError("%s: connection %s" % (identity, pc.connectionState))
    return pc, urllib.parse.urljoin(url + "/", location or ""), body


async def bytes_sent(pc):
    report = await pc.getStats()
    return sum(s.bytesSent for s in report.values() if s.type == "outbound-rtp" and s.kind == "video")


async def bitrate(pc, seconds):
    b0, t0 = await bytes_sent(pc), time.monotonic()
    await asyncio.sleep(seconds)
    b1, t1 = await bytes_sent(pc), time.monotonic()
    return int((b1 - b0) * 8 / (t1 - t0))


def metric(url, name):
    status, text = E_http_get(url + "/metrics")
    if status != 200:
        return None
    m = re.search(r"^%s(?:\{[^}]*\})? ([0-9.e+]+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def E_http_get(url):
    import urllib.request, urllib.error
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except (urllib.error.URLError, OSError) as e:
        return None, str(e)


async def scenario(args, out, pcs):
    checks = out["checks"]
    cam, location, answer = await join(args.url, args.room, "cam", video=True)
    pcs.append((cam, location))
    video = answer.split("m=video")[1] if "m=video" in answer else ""
    checks["join"] = None if "goog-remb" in video else "the answer's video m-line has no goog-remb"
    await asyncio.sleep(args.settle)
    out["capAlone"] = cap_for(1)
    out["before"] = await bitrate(cam, args.measure)
    checks["before"] = None if out["before"] > 500_000 else "alone (cap %d) it sent only %d bit/s" % (out["capAlone"], out["before"])
    for i in range(args.fillers):
        pc, loc, _ = await join(args.url, args.room, "filler%d" % i, video=False)
        pcs.append((pc, loc))
    count = 1 + args.fillers
    out["cap"] = cap_for(count)
    out["tile"] = "%dx%d" % grid_tile(count)
    await asyncio.sleep(args.settle)
    out["metric"] = await asyncio.to_thread(metric, args.url, "tessera_camera_bitrate_cap_bits")
    checks["metric"] = None if out["metric"] == out["cap"] else "tessera_camera_bitrate_cap_bits %s, want %d" % (out["metric"], out["cap"])
    out["after"] = await bitrate(cam, args.measure)
    checks["after"] = None if out["after"] < 450_000 else "in a room of %d (cap %d) it sent %d bit/s" % (count, out["cap"], out["after"])


async def run(args, out):
    pcs = []
    try:
        await scenario(args, out, pcs)
    finally:
        for pc, location in pcs:
            try:
                await asyncio.wait_for(asyncio.to_thread(E_delete, location), 3)
            except Exception:
                pass
            try:
                await asyncio.wait_for(pc.close(), 3)
            except Exception:
                pass


def E_delete(url):
    import urllib.request
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=2).read()
    except Exception:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--room", default="remb")
    ap.add_argument("--fillers", type=int, default=4, help="participants joining after cam (5 in all: cap 369 kbit/s)")
    ap.add_argument("--settle", type=float, default=3)
    ap.add_argument("--measure", type=float, default=4)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    out = {"peer": "remb", "room": args.room, "checks": {}}
    try:
        asyncio.run(asyncio.wait_for(run(args, out), args.timeout))
    except asyncio.TimeoutError:
        out["checks"]["timeout"] = "run exceeded %.0f s" % args.timeout
    except Exception as e:
        out["checks"]["error"] = "%s: %s" % (type(e).__name__, e)
    failed = {k: v for k, v in out["checks"].items() if v is not None}
    out["ok"] = not failed and all(k in out["checks"] for k in ("join", "before", "metric", "after"))
    out["checks"] = {k: ("ok" if v is None else "FAIL") for k, v in out["checks"].items()}
    if not failed and not out["ok"]:
        failed["incomplete"] = "not every check ran"
    print(json.dumps(out), flush=True)
    for k, v in failed.items():
        print("remb_aiortc: FAIL %s: %s" % (k, v), file=sys.stderr)
    if not failed:
        print("remb_aiortc: PASS", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
