#!/usr/bin/env python3
"""Interop: an aiortc peer calls the host's echo endpoint and checks what comes back.

Run with the venv python (/work/main/.venv/bin/python), inside a loopback-only network
namespace (see run.sh). It POSTs an offer (Opus + VP8 only, BUNDLE, rtcp-mux) to
--url, sends a pure sine tone and 640x480 frames of a solid colour with a small moving
bar, and for --seconds after DTLS connects checks what the host echoes:

  post        201 with an application/sdp answer
  dtls        the DTLS transport reaches 'connected'
  profile     the negotiated SRTP profile is --expect-profile ('any' skips)
  video       echoed video frames decoded, every one --width x --height
  color       the dominant colour of the echoed frames is the sent one (per channel
              within --color-tolerance, 8-bit RGB)
  audio       echoed audio frames received
  tone        the strongest FFT bin of the echoed audio is --tone (within --tone-tolerance Hz)
  level       the echoed audio has a real level (RMS above --min-level-dbfs)

Prints one JSON line of measurements on stdout; exit 0 only when every check passed,
otherwise 1 with `echo_aiortc: FAIL <check>: <detail>` lines on stderr. Every wait is
bounded; the whole run is bounded by --timeout.

usage: echo_aiortc.py --url http://127.0.0.1:PORT/v1/echo [--seconds 10] [--tone 440]
                      [--color ff00ff] [--expect-profile SRTP_AEAD_AES_128_GCM]
"""
import argparse, asyncio, fractions, json, math, sys, time, urllib.error, urllib.request

import aioice.ice

# aioice gathers on every interface but loopback: in a loopback-only namespace that is none.
aioice.ice.get_host_addresses = lambda *a, **k: ["127.0.0.1"]

import numpy as np
from av import AudioFrame, VideoFrame
from aiortc import (MediaStreamTrack, RTCConfiguration, RTCPeerConnection,
                    RTCRtpSender, RTCSessionDescription)
from aiortc.mediastreams import MediaStreamError

SAMPLE_RATE = 48000
AUDIO_PTIME = 0.020


class ToneTrack(MediaStreamTrack):
    """A pure sine tone: 20 ms frames, s16 mono, 48 kHz, paced by the wall clock."""
    kind = "audio"

    def __init__(self, hz, amplitude=0.25):
        super().__init__()
        self.hz, self.amplitude = hz, amplitude
        self._n = 0          # samples produced so far
        self._start = None

    async def recv(self):
        if self._start is None:
            self._start = time.monotonic()
        samples = int(SAMPLE_RATE * AUDIO_PTIME)
        due = self._start + self._n / SAMPLE_RATE
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        t = (np.arange(samples) + self._n) / SAMPLE_RATE
        data = np.round(np.sin(2 * np.pi * self.hz * t) * self.amplitude * 32767).astype(np.int16)
        frame = AudioFrame.from_ndarray(data.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        frame.pts = self._n
        frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
        self._n += samples
        return frame


class ColorTrack(MediaStreamTrack):
    """Frames of a solid colour with a small moving bar (keeps the encoder busy)."""
    kind = "video"

    def __init__(self, rgb, width, height, fps):
        super().__init__()
        self.width, self.height, self.fps = width, height, fps
        self._base = np.empty((height, width, 3), dtype=np.uint8)
        self._base[:, :] = rgb
        self._bar = tuple(255 - c for c in rgb)   # contrasting bar colour
        self._n = 0
        self._start = None

    async def recv(self):
        if self._start is None:
            self._start = time.monotonic()
        delay = self._start + self._n / self.fps - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        img = self._base.copy()
        bar_w = max(4, self.width // 40)                     # 16 px at 640: 2.5 % of the frame
        x = (self._n * 8) % (self.width - bar_w)
        img[self.height // 4: 3 * self.height // 4, x:x + bar_w] = self._bar
        frame = VideoFrame.from_ndarray(img, format="rgb24")
        frame.pts = int(self._n * 90000 / self.fps)
        frame.time_base = fractions.Fraction(1, 90000)
        self._n += 1
        return frame


def parse_color(text):
    text = text.strip().lstrip("#")
    if len(text) != 6:
        raise argparse.ArgumentTypeError("colour must be RRGGBB hex, e.g. ff00ff")
    return tuple(int(text[i:i + 2], 16) for i in (0, 2, 4))


def post_offer(url, sdp, timeout):
    """POST the offer; returns (status, content type, location, answer text)."""
    req = urllib.request.Request(url, data=sdp.encode(), method="POST",
                                 headers={"Content-Type": "application/sdp"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return (resp.status, resp.headers.get("Content-Type", ""), resp.headers.get("Location"),
                    resp.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), None, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return None, "", None, "POST %s failed: %s" % (url, getattr(e, "reason", e))


def answer_summary(sdp):
    """What the answer says about the host's transport (informational, not asserted)."""
    lines = sdp.splitlines()
    return {
        "iceLite": any(l.strip() == "a=ice-lite" for l in lines),
        "setup": sorted({l.split(":", 1)[1].strip() for l in lines if l.startswith("a=setup:")}),
        "bundle": any(l.startswith("a=group:BUNDLE") for l in lines),
        "rtcpMux": any(l.strip() == "a=rtcp-mux" for l in lines),
        "candidates": [" ".join(l.split()[4:6]) for l in lines if l.startswith("a=candidate:")],
        "codecs": sorted({l.split(None, 1)[1].split("/")[0] for l in lines if l.startswith("a=rtpmap:")}),
    }


class Results:
    def __init__(self):
        self.t_post = None
        self.t_dtls = None
        self.t_video = None
        self.t_audio = None
        self.video_frames = 0
        self.video_sizes = {}
        self.colors = []          # per sampled frame: median RGB
        self.audio_frames = 0
        self.audio_rate = SAMPLE_RATE
        self.audio = []           # mono int16 chunks


def ms(t0, t):
    return None if t is None or t0 is None else round((t - t0) * 1000, 1)


async def consume_video(track, res, deadline):
    while time.monotonic() < deadline:
        try:
            frame = await asyncio.wait_for(track.recv(), max(0.01, deadline - time.monotonic()))
        except (asyncio.TimeoutError, MediaStreamError):
            return
        if res.t_video is None:
            res.t_video = time.monotonic()
        res.video_frames += 1
        size = "%dx%d" % (frame.width, frame.height)
        res.video_sizes[size] = res.video_sizes.get(size, 0) + 1
        if res.video_frames % 5 == 1:   # colour of every 5th frame is plenty, and cheap
            rgb = frame.to_ndarray(format="rgb24")
            res.colors.append(np.median(rgb[::4, ::4].reshape(-1, 3), axis=0))


async def consume_audio(track, res, deadline):
    while time.monotonic() < deadline:
        try:
            frame = await asyncio.wait_for(track.recv(), max(0.01, deadline - time.monotonic()))
        except (asyncio.TimeoutError, MediaStreamError):
            return
        if res.t_audio is None:
            res.t_audio = time.monotonic()
        res.audio_frames += 1
        res.audio_rate = frame.sample_rate
        data = frame.to_ndarray()
        channels = len(frame.layout.channels)
        if frame.format.is_planar:
            mono = data[0]
        else:                          # packed: interleaved channels in one row
            mono = data.reshape(-1)[::channels]
        res.audio.append(mono.astype(np.int16))


def analyse_audio(res, skip_s=0.5):
    """Dominant frequency (Hz), RMS level (dBFS) and tone purity of the received audio."""
    if not res.audio:
        return None, None, None
    x = np.concatenate(res.audio).astype(np.float64) / 32768.0
    skip = int(skip_s * res.audio_rate)
    if len(x) > skip + res.audio_rate // 4:
        x = x[skip:]                   # skip the start (jitter buffer fill, decoder warm-up)
    rms = math.sqrt(float(np.mean(x * x))) if len(x) else 0.0
    level = 20 * math.log10(rms) if rms > 0 else -200.0
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    spec[0] = 0
    freqs = np.fft.rfftfreq(len(x), 1.0 / res.audio_rate)
    peak = int(np.argmax(spec))
    band = (freqs > freqs[peak] - 20) & (freqs < freqs[peak] + 20)
    purity = float(spec[band].sum() / spec.sum()) if spec.sum() > 0 else 0.0
    return round(float(freqs[peak]), 1), round(level, 1), round(purity, 3)


def srtp_profile_of(pc):
    """The SRTP profile the DTLS handshake selected (aiortc internals: the pyOpenSSL object)."""
    for t in pc.getTransceivers():
        dtls = t.receiver.transport
        ssl = getattr(dtls, "_ssl", None)
        if ssl is not None and dtls.state == "connected":
            p = ssl.get_selected_srtp_profile()
            if p:
                return p.decode()
    return None


async def run(args, res, out):
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    try:
        await call(pc, args, res, out)
    finally:
        try:
            await asyncio.wait_for(pc.close(), 5)
        except Exception:
            pass


async def call(pc, args, res, out):
    audio_t = pc.addTransceiver(ToneTrack(args.tone), direction="sendrecv")
    video_t = pc.addTransceiver(ColorTrack(args.color, args.width, args.height, args.fps), direction="sendrecv")
    audio_t.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("audio").codecs
                                 if c.mimeType.lower() == "audio/opus"])
    # VP8 only (its rtx stays: retransmission of VP8, as browsers offer it).
    video_t.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("video").codecs
                                 if c.mimeType.lower() in ("video/vp8", "video/rtx")])

    dtls_connected = asyncio.Event()
    consumers = []
    run_deadline = [None]   # set once DTLS is connected

    def watch(dtls):
        @dtls.on("statechange")
        def _():
            if dtls.state == "connected" and res.t_dtls is None:
                res.t_dtls = time.monotonic()
                dtls_connected.set()
            elif dtls.state == "failed":
                out["dtlsFailed"] = True
                dtls_connected.set()

    for t in pc.getTransceivers():
        watch(t.receiver.transport)

    @pc.on("track")
    def on_track(track):
        # consumers run until the end of the call (deadline fixed once DTLS connects)
        async def runner():
            await asyncio.wait_for(dtls_connected.wait(), args.connect_timeout + 5)
            deadline = run_deadline[0] or time.monotonic() + args.seconds
            if track.kind == "video":
                await consume_video(track, res, deadline)
            else:
                await consume_audio(track, res, deadline)
        consumers.append(asyncio.ensure_future(runner()))

    # createOffer + gathering (aiortc gathers inside setLocalDescription)
    await asyncio.wait_for(pc.setLocalDescription(await pc.createOffer()), 10)

    res.t_post = time.monotonic()
    status, ctype, location, body = await asyncio.wait_for(
        asyncio.to_thread(post_offer, args.url, pc.localDescription.sdp, args.http_timeout),
        args.http_timeout + 1)
    out["httpStatus"] = status
    out["location"] = location
    if status != 201 or not ctype.lower().startswith("application/sdp"):
        out["checks"]["post"] = "want 201 application/sdp, got %s %r: %s" % (status, ctype, body[:300])
        return
    out["checks"]["post"] = None
    out["answer"] = answer_summary(body)
    await asyncio.wait_for(pc.setRemoteDescription(RTCSessionDescription(body, "answer")), 5)
    remaining = args.connect_timeout - (time.monotonic() - res.t_post)
    try:
        await asyncio.wait_for(dtls_connected.wait(), max(0.1, remaining))
    except asyncio.TimeoutError:
        pass
    if res.t_dtls is None:
        out["checks"]["dtls"] = "DTLS not connected within %.0f s of the POST (ice %s, connection %s)" % (
            args.connect_timeout, pc.iceConnectionState, pc.connectionState)
        return
    out["checks"]["dtls"] = None
    run_deadline[0] = res.t_dtls + args.seconds
    out["profile"] = srtp_profile_of(pc)
    # let the call run; consumers stop by themselves at the deadline
    await asyncio.sleep(max(0.0, run_deadline[0] - time.monotonic()))
    if consumers:
        await asyncio.wait(consumers, timeout=2)
    for c in consumers:
        c.cancel()
    out["connectionState"] = pc.connectionState


def evaluate(args, res, out):
    c = out["checks"]
    if "dtls" not in c or c["dtls"] is not None:
        return   # no call to judge: the POST or DTLS failed (already reported)
    want = args.expect_profile
    if want.lower() != "any":
        c["profile"] = None if out.get("profile") == want else "negotiated %s, want %s" % (out.get("profile"), want)
    c["video"] = None if res.video_frames > 0 else "no echoed video frame decoded"
    want_size = "%dx%d" % (args.width, args.height)
    if res.video_frames:
        bad = {k: v for k, v in res.video_sizes.items() if k != want_size}
        c["videoSize"] = None if not bad else "frames of %s, want %s" % (res.video_sizes, want_size)
    if res.colors:
        color = np.mean(np.array(res.colors), axis=0)
        diff = max(abs(float(color[i]) - args.color[i]) for i in range(3))
        c["color"] = None if diff <= args.color_tolerance else \
            "dominant colour %s, sent %s (max channel diff %.0f > %d)" % (
                out["meanColor"], "#%02x%02x%02x" % args.color, diff, args.color_tolerance)
    c["audio"] = None if res.audio_frames > 0 else "no echoed audio frame"
    if res.audio_frames:
        hz, level = out["toneHz"], out["levelDbfs"]
        c["tone"] = None if hz is not None and abs(hz - args.tone) <= args.tone_tolerance else \
            "strongest bin %s Hz, sent %s Hz (tolerance %s)" % (hz, args.tone, args.tone_tolerance)
        c["level"] = None if level is not None and level > args.min_level_dbfs else \
            "RMS %s dBFS, want > %s (silence?)" % (level, args.min_level_dbfs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="the host's echo endpoint, http://127.0.0.1:PORT/v1/echo")
    ap.add_argument("--seconds", type=float, default=10, help="how long the call runs after DTLS connects")
    ap.add_argument("--tone", type=float, default=440)
    ap.add_argument("--tone-tolerance", type=float, default=10)
    ap.add_argument("--min-level-dbfs", type=float, default=-40)
    ap.add_argument("--color", type=parse_color, default=parse_color("ff00ff"))
    ap.add_argument("--color-tolerance", type=int, default=40)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--fps", type=float, default=15, help="sent frame rate (15 keeps CPU modest)")
    ap.add_argument("--expect-profile", default="SRTP_AEAD_AES_128_GCM", help="or 'any'")
    ap.add_argument("--connect-timeout", type=float, default=8, help="POST to DTLS connected")
    ap.add_argument("--http-timeout", type=float, default=5)
    ap.add_argument("--timeout", type=float, default=None, help="hard bound of the whole run (default seconds + 10)")
    args = ap.parse_args()
    hard = args.timeout or args.seconds + 10

    res = Results()
    out = {"peer": "aiortc", "checks": {}}
    try:
        asyncio.run(asyncio.wait_for(run(args, res, out), hard))
    except asyncio.TimeoutError:
        out["checks"]["timeout"] = "run exceeded its hard bound of %.0f s" % hard
    except Exception as e:  # a crash is a failed check, not a traceback without JSON
        out["checks"]["error"] = "%s: %s" % (type(e).__name__, e)

    if res.colors:
        color = np.mean(np.array(res.colors), axis=0)
        out["meanColor"] = "#%02x%02x%02x" % tuple(int(round(float(v))) for v in color)
    hz, level, purity = analyse_audio(res)
    out.update({
        "toneHz": hz, "levelDbfs": level, "tonePurity": purity,
        "msPostToDtlsConnected": ms(res.t_post, res.t_dtls),
        "msPostToFirstVideoFrame": ms(res.t_post, res.t_video),
        "msPostToFirstAudioFrame": ms(res.t_post, res.t_audio),
        "videoFrames": res.video_frames, "videoSizes": res.video_sizes,
        "audioFrames": res.audio_frames,
        "audioSeconds": round(sum(len(a) for a in res.audio) / res.audio_rate, 2),
    })
    out.setdefault("profile", None)
    evaluate(args, res, out)
    failed = {k: v for k, v in out["checks"].items() if v is not None}
    out["checks"] = {k: ("ok" if v is None else "FAIL") for k, v in out["checks"].items()}
    out["ok"] = not failed
    print(json.dumps(out, sort_keys=False), flush=True)
    for k, v in failed.items():
        print("echo_aiortc: FAIL %s: %s" % (k, v), file=sys.stderr)
    if not failed:
        print("echo_aiortc: PASS", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
