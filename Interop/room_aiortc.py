#!/usr/bin/env python3
"""Interop: three aiortc participants (alice, bob, carol) join one room of the host and check the
mix, the composite, layout templates, `hear`, recording and a leave.

Run with the venv python (/work/main/.venv/bin/python), inside a loopback-only network namespace
(see run.sh). Reuses echo_aiortc.py's tracks and helpers (importing it applies its aioice patch).
Each participant POSTs an offer (Opus + VP8 only) to --url/v1/rooms/ROOM/participants?identity=ID,
sends its own tone (alice 440 Hz, bob 660 Hz, carol 880 Hz) and its own solid colour (red, green,
blue, with a small moving bar so VP8 keeps sending). Checks, in order, each bounded:

  join        201 + answer for all three, DTLS connected
  grid3       each participant hears the other two tones and not its own (own tone >= 20 dB
              below the weaker of the others), and its composite (1280x720) shows the three
              colours at the centres of the grid tiles (640x360 at (0,0), (640,0), (320,360))
  template    PUT a template that swaps alice and bob: every participant's composite follows
              (then PUT {"preset": "grid"} back, checked too)
  hear        PATCH alice {"hear": {"bob": false}}: alice no longer hears 660 Hz, carol still does
  subscribe   a fourth aiortc peer, receive only, POSTs to viewers?participant=alice&source=camera and
              decodes alice's camera as alice sends it (320x240, red; not the 1280x720 composite);
              another views bob's camera (for the leave check). Carol renegotiates a recvonly
              video m-line, POSTs {"participant": "alice", "source": "camera"} to her
              subscriptions (count 1, the new mid) and decodes alice's camera on it; again (count
              2, same mid), DELETE (count 1: its packets still coming), DELETE (count 0: packets
              and frames stop)
  recording   POST a recording ({"file": "interop-room.webm"}), ~2 s, DELETE it: 200, the file
              (under the host's cwd + recordings/, i.e. this process's cwd under run.sh, or
              --recordings-dir) has a vp8 and an opus stream (ffprobe)
  leave       bob DELETEs itself (204): alice and carol no longer hear 660 Hz and their composite
              is a grid of two (red and blue side by side, no green); the viewer of bob's camera
              is closed (its resource answers DELETE with 404)

A subscription or viewer that decodes nothing says in its failure what its receiver took (per SSRC
and payload type), its NACKs and PLIs and what its transport dropped unrouted; with
TESSERA_DIAG=FILE, FILE gets every such event and the routing tables.

Prints one JSON line of measurements on stdout; exit 0 only when every check passed, otherwise 1
with `room_aiortc: FAIL <check>: <detail>` lines on stderr. The whole run is bounded by --timeout.

usage: room_aiortc.py --url http://127.0.0.1:PORT [--room interop] [--timeout 50]
"""
import argparse, asyncio, json, math, os, shutil, subprocess, sys, time, urllib.error, urllib.parse, urllib.request

sys.dont_write_bytecode = True   # no Interop/__pycache__ from importing echo_aiortc
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import echo_aiortc as E   # noqa: E402  (patches aioice's host addresses to 127.0.0.1)

import numpy as np   # noqa: E402
from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription   # noqa: E402
from aiortc.mediastreams import MediaStreamError   # noqa: E402

PEOPLE = [("alice", 440.0, (230, 30, 30)), ("bob", 660.0, (30, 200, 30)), ("carol", 880.0, (30, 30, 230))]
TONES = {name: hz for name, hz, _ in PEOPLE}
COLORS = {name: rgb for name, _, rgb in PEOPLE}
CANVAS_W, CANVAS_H = 1280, 720
GRID3 = {"tl": (320, 180), "tr": (960, 180), "bc": (640, 540)}   # tile centres of a grid of 3
BAND_HZ = 12.0            # half width of a tone's FFT band
MIN_SHARE = 0.05          # a heard tone holds at least this share of the total power
ABSENT_DB = 20.0          # an unheard tone lies at least this far below the weakest heard one
COLOR_TOL = 70            # max channel difference to call a patch a participant's colour


def now():
    return time.monotonic()


class Peer:
    def __init__(self, name, hz, rgb):
        self.name, self.hz, self.rgb = name, hz, rgb
        self.pc = None
        self.location = None
        self.t_post = self.t_dtls = self.t_audio = self.t_video = None
        self.audio = []            # (arrival time, float64 mono chunk)
        self.rate = E.SAMPLE_RATE
        self.frame = None          # latest decoded video frame
        self.t_frame = None
        self.video_frames = 0
        self.sizes = {}
        self.dtls = asyncio.Event()
        self.tasks = []

    def window(self, since, seconds):
        """The mono audio that arrived after `since`, at most the last `seconds` of it."""
        chunks = [c for t, c in self.audio if t >= since]
        if not chunks:
            return np.zeros(0)
        x = np.concatenate(chunks)
        return x[-int(seconds * self.rate):]

    def prune(self, keep=8.0):
        cut = now() - keep
        if self.audio and self.audio[0][0] < cut:
            self.audio = [(t, c) for t, c in self.audio if t >= cut]


def tone_powers(x, rate, tones=TONES):
    """Share of the total power in a band around each of `tones` ({name: Hz}), and the RMS (dBFS)."""
    if len(x) < rate // 5:           # at least 0.2 s
        return None
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    spec[0] = 0
    freqs = np.fft.rfftfreq(len(x), 1.0 / rate)
    total = float(spec.sum()) or 1e-30
    shares = {n: float(spec[(freqs > hz - BAND_HZ) & (freqs < hz + BAND_HZ)].sum()) / total for n, hz in tones.items()}
    rms = math.sqrt(float(np.mean(x * x)))
    return {"shares": shares, "rmsDbfs": round(20 * math.log10(rms), 1) if rms > 0 else -200.0}


def db(a, b):
    return 10 * math.log10(max(a, 1e-12) / max(b, 1e-12))


def judge_audio(p, hear, not_hear, since, seconds, tones=TONES):
    """(ok, detail): the tones of `hear` are strong, those of `not_hear` >= ABSENT_DB below them."""
    m = tone_powers(p.window(since, seconds), p.rate, tones)
    if m is None:
        return False, "not enough audio yet", None
    s = m["shares"]
    weakest = min(s[n] for n in hear) if hear else 1.0
    problems = ["%s (%g Hz) share %.3f < %.2f" % (n, tones[n], s[n], MIN_SHARE) for n in hear if s[n] < MIN_SHARE]
    problems += ["%s (%g Hz) only %.1f dB below the weakest heard tone, want >= %.0f" % (n, tones[n], db(weakest, s[n]), ABSENT_DB)
                 for n in not_hear if db(weakest, s[n]) < ABSENT_DB]
    summary = {n: round(v, 4) for n, v in s.items()}
    summary["rmsDbfs"] = m["rmsDbfs"]
    return not problems, "; ".join(problems), summary


def classify(rgb):
    best, dist = None, 1e9
    for n, c in COLORS.items():
        d = max(abs(float(rgb[i]) - c[i]) for i in range(3))
        if d < dist:
            best, dist = n, d
    return best if dist <= COLOR_TOL else "#%02x%02x%02x" % tuple(int(v) for v in rgb)


def frame_rgb(p, since):
    """The latest decoded frame that arrived after `since`, as an RGB array (or None)."""
    if p.frame is None or p.t_frame < since:
        return None
    return p.frame.to_ndarray(format="rgb24")


def colour_at(img, cx, cy, hw=28, hh=18):
    patch = img[max(0, cy - hh):cy + hh, max(0, cx - hw):cx + hw].reshape(-1, 3)
    return classify(np.median(patch, axis=0))


def judge_layout(p, since, want):
    """want: {(x, y): name}. (ok, detail, seen)."""
    img = frame_rgb(p, since)
    if img is None:
        return False, "no composite frame yet", None
    if img.shape[:2] != (CANVAS_H, CANVAS_W):
        return False, "composite is %dx%d, want %dx%d" % (img.shape[1], img.shape[0], CANVAS_W, CANVAS_H), None
    seen = {"%d,%d" % xy: colour_at(img, *xy) for xy in want}
    bad = ["at %s %s, want %s" % (k, seen[k], n) for k, n in (("%d,%d" % xy, n) for xy, n in want.items()) if seen[k] != n]
    return not bad, "; ".join(bad), seen


def judge_two_tiles(p, since, left, right, gone):
    img = frame_rgb(p, since)
    if img is None:
        return False, "no composite frame yet", None
    if img.shape[:2] != (CANVAS_H, CANVAS_W):
        return False, "composite is %dx%d" % (img.shape[1], img.shape[0]), None
    seen = {"320,360": colour_at(img, 320, 360), "960,360": colour_at(img, 960, 360)}
    small = img[::8, ::8].reshape(-1, 3).astype(np.int32)
    g = np.array(COLORS[gone])
    gone_share = float(np.mean(np.max(np.abs(small - g), axis=1) <= COLOR_TOL))
    seen["%sShare" % gone] = round(gone_share, 4)
    bad = []
    if sorted([seen["320,360"], seen["960,360"]]) != sorted([left, right]):
        bad.append("left/right centres show %s/%s, want %s and %s" % (seen["320,360"], seen["960,360"], left, right))
    if gone_share > 0.005:
        bad.append("%s's colour still covers %.1f %% of the composite" % (gone, 100 * gone_share))
    return not bad, "; ".join(bad), seen


async def wait_for(fn, timeout, interval=0.2):
    """Polls fn() -> (ok, detail, data) until ok or timeout. Returns (ok, seconds, detail, data)."""
    t0 = now()
    ok, detail, data = False, "never evaluated", None
    while True:
        ok, detail, data = fn()
        if ok or now() - t0 >= timeout:
            return ok, round(now() - t0, 2), detail, data
        await asyncio.sleep(interval)


def http(method, url, body=None, ctype="application/json", timeout=5):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": ctype} if data is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return None, "%s %s failed: %s" % (method, url, getattr(e, "reason", e))


async def ahttp(*a, **k):
    return await asyncio.to_thread(http, *a, **k)


async def consume(p, track):
    while True:
        try:
            frame = await track.recv()
        except MediaStreamError:
            return
        t = now()
        if track.kind == "video":
            p.video_frames += 1
            size = "%dx%d" % (frame.width, frame.height)
            p.sizes[size] = p.sizes.get(size, 0) + 1
            if p.t_video is None:
                p.t_video = t
            p.frame, p.t_frame = frame, t
        else:
            p.rate = frame.sample_rate
            data = frame.to_ndarray()
            ch = len(frame.layout.channels)
            mono = data[0] if frame.format.is_planar else data.reshape(-1)[::ch]
            x = mono.astype(np.float64) / 32768.0
            if p.t_audio is None and len(x) and math.sqrt(float(np.mean(x * x))) > 0.01:   # > -40 dBFS
                p.t_audio = t
            p.audio.append((t, x))
            if len(p.audio) % 50 == 0:
                p.prune()


class Sink:
    """Frames of one received video track: how many, the first's arrival, the latest."""
    def __init__(self):
        self.frames, self.t_first, self.frame, self.t_frame, self.ended = 0, None, None, None, False
        self.receiver = None   # the RTCRtpReceiver, when known (for its packet count)


async def packets_received(sink):
    """RTP packets the sink's receiver has taken (its inbound-rtp statistics), or None."""
    if sink.receiver is None:
        return None
    stats = await sink.receiver.getStats()
    return sum(getattr(r, "packetsReceived", 0) for r in stats.values() if getattr(r, "type", "") == "inbound-rtp")


async def consume_into(sink, track):
    while True:
        try:
            frame = await track.recv()
        except MediaStreamError:
            sink.ended = True
            return
        sink.frames += 1
        sink.frame, sink.t_frame = frame, now()
        if sink.t_first is None:
            sink.t_first = sink.t_frame


def judge_track(sink, since, name, size=(320, 240)):
    """(ok, detail, seen): the latest frame after `since` is `name`'s camera as sent: its size and colour."""
    if sink.frame is None or sink.t_frame < since:
        return False, "no frame yet", None
    img = sink.frame.to_ndarray(format="rgb24")
    seen = {"size": "%dx%d" % (img.shape[1], img.shape[0]), "centre": colour_at(img, img.shape[1] // 2, img.shape[0] // 2)}
    bad = []
    if (img.shape[1], img.shape[0]) != size:
        bad.append("frame is %s, want %dx%d (the camera as sent, not the composite)" % (seen["size"], size[0], size[1]))
    if seen["centre"] != name:
        bad.append("centre shows %s, want %s" % (seen["centre"], name))
    return not bad, "; ".join(bad), seen


def instrument(r, sink):
    """Records what the receiver r takes, asks for and what its transport drops unrouted, for
    `diagnosis` (how a subscription's RTX was once found unroutable): cheap, so always on."""
    sink.receiver = r
    sink.diag = diag = []
    h0, pli0, nack0 = r._handle_rtp_packet, r._send_rtcp_pli, r._send_rtcp_nack
    async def h(packet, arrival_time_ms):
        diag.append(("rtp", round(now(), 3), packet.ssrc, packet.payload_type, packet.sequence_number, packet.timestamp, len(packet.payload), packet.marker))
        return await h0(packet, arrival_time_ms)
    async def pli(ssrc):
        diag.append(("pli", round(now(), 3), ssrc))
        return await pli0(ssrc)
    async def nack(ssrc, lost):
        diag.append(("nack", round(now(), 3), ssrc, list(lost)))
        return await nack0(ssrc, lost)
    r._handle_rtp_packet, r._send_rtcp_pli, r._send_rtcp_nack = h, pli, nack
    router = r.transport._rtp_router
    route0 = router.route_rtp
    def route(packet):
        got = route0(packet)
        if got is None:
            diag.append(("dropped", round(now(), 3), packet.ssrc, packet.payload_type, packet.sequence_number))
        return got
    router.route_rtp = route
    sink.router = router


def diagnosis(sink, since):
    """A short account of what `instrument` recorded for a sink that decoded nothing since `since`
    (for the failure's line), and with TESSERA_DIAG=FILE all of it, with the answer and the
    transport's routing tables, as JSON in FILE."""
    events = getattr(sink, "diag", None)
    if events is None:
        return ""
    path = os.environ.get("TESSERA_DIAG")
    if path:
        router = sink.router
        with open(path, "w") as f:
            json.dump({"since": since, "frames": sink.frames, "events": events, "answer": getattr(sink, "answer", None),
                       "receiver": id(sink.receiver),
                       "ssrcTable": {str(k): id(v) for k, v in router.ssrc_table.items()},
                       "payloadTypeTable": {str(k): [id(v) for v in vs] for k, vs in router.payload_type_table.items()},
                       "rtxSSRCs": {str(k): v for k, v in sink.receiver._RTCRtpReceiver__rtx_ssrc.items()}}, f)
    streams = {}
    for e in events:
        if e[0] == "rtp":
            st = streams.setdefault((e[2], e[3]), {"n": 0, "seqs": set(), "first": e[1], "last": e[1], "markers": 0})
            st["n"] += 1
            st["seqs"].add(e[4])
            st["last"] = e[1]
            st["markers"] += bool(e[7])
    parts = []
    for (ssrc, pt), st in streams.items():
        lo, hi = min(st["seqs"]), max(st["seqs"])
        span = (hi - lo) % 65536 + 1
        parts.append("ssrc %d pt %d: %d packets (%d frames' ends), seq %d..%d with %d missing, %+.1f..%+.1f s"
                     % (ssrc, pt, st["n"], st["markers"], lo, hi, span - len(st["seqs"]) if span < 30000 else -1,
                        st["first"] - since, st["last"] - since))
    nacks = [e for e in events if e[0] == "nack"]
    plis = [e for e in events if e[0] == "pli"]
    dropped = [e for e in events if e[0] == "dropped"]
    parts.append("%d NACKs%s, %d PLIs%s, %d dropped unrouted, %d frames decoded"
                 % (len(nacks), " (last %+.1f s: %s)" % (nacks[-1][1] - since, nacks[-1][3][:8]) if nacks else "",
                    len(plis), " at %s" % ["%+.1f" % (e[1] - since) for e in plis[-4:]] if plis else "",
                    len(dropped), sink.frames))
    return " [received: %s]" % "; ".join(parts)


async def view_track(args, publisher, pcs):
    """A receive-only aiortc peer on viewers?participant=publisher&source=camera: (sink, location, t_post, error)."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pcs.append(pc)
    vt = pc.addTransceiver("video", direction="recvonly")
    vt.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType.lower() in ("video/vp8", "video/rtx")])
    sink = Sink()
    instrument(vt.receiver, sink)
    tasks = []

    @pc.on("track")
    def on_track(track):
        tasks.append(asyncio.ensure_future(consume_into(sink, track)))

    await asyncio.wait_for(pc.setLocalDescription(await pc.createOffer()), 10)
    url = "%s/v1/rooms/%s/viewers?participant=%s&source=camera" % (args.url, urllib.parse.quote(args.room), publisher)
    t_post = now()
    status, ctype, location, body = await asyncio.wait_for(asyncio.to_thread(E.post_offer, url, pc.localDescription.sdp, 5), 6)
    if status != 201:
        return sink, None, t_post, "viewer of %s: POST want 201, got %s: %s" % (publisher, status, body[:300])
    await asyncio.wait_for(pc.setRemoteDescription(RTCSessionDescription(body, "answer")), 5)
    sink.tasks = tasks
    return sink, urllib.parse.urljoin(args.url + "/", location), t_post, None


async def add_receiver(p):
    """Renegotiates p's session with one more recvonly video m-line (PATCH with the offer): (sink, mid, error)."""
    pc = p.pc
    sink = Sink()
    transceiver = pc.addTransceiver("video", direction="recvonly")
    transceiver.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("video").codecs
                                     if c.mimeType.lower() in ("video/vp8", "video/rtx")])
    p.sink_override = sink
    sink.receiver = transceiver.receiver
    instrument(transceiver.receiver, sink)
    await asyncio.wait_for(pc.setLocalDescription(await pc.createOffer()), 10)
    status, body = await ahttp("PATCH", p.location, pc.localDescription.sdp.encode(), ctype="application/sdp")
    if status != 200:
        return sink, None, "PATCH with a renegotiation offer: want 200, got %s: %s" % (status, body[:300])
    sink.answer = body
    await asyncio.wait_for(pc.setRemoteDescription(RTCSessionDescription(body, "answer")), 5)
    return sink, transceiver.mid, None


async def join(p, args):
    p.pc = pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    at = pc.addTransceiver(E.ToneTrack(p.hz), direction="sendrecv")
    vt = pc.addTransceiver(E.ColorTrack(p.rgb, 320, 240, 15), direction="sendrecv")
    at.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("audio").codecs if c.mimeType.lower() == "audio/opus"])
    vt.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("video").codecs
                            if c.mimeType.lower() in ("video/vp8", "video/rtx")])
    for t in pc.getTransceivers():
        dtls = t.receiver.transport

        @dtls.on("statechange")
        def _(dtls=dtls):
            if dtls.state == "connected" and p.t_dtls is None:
                p.t_dtls = now()
                p.dtls.set()
            elif dtls.state == "failed":
                p.dtls.set()

    @pc.on("track")
    def on_track(track):
        # The video track of an m-line added by renegotiation goes to its own sink.
        sink, p.sink_override = getattr(p, "sink_override", None), None
        p.tasks.append(asyncio.ensure_future(consume_into(sink, track) if sink and track.kind == "video" else consume(p, track)))

    await asyncio.wait_for(pc.setLocalDescription(await pc.createOffer()), 10)
    url = "%s/v1/rooms/%s/participants?identity=%s" % (args.url, urllib.parse.quote(args.room), p.name)
    p.t_post = now()
    status, ctype, location, body = await asyncio.wait_for(
        asyncio.to_thread(E.post_offer, url, pc.localDescription.sdp, 5), 6)
    if status != 201 or not ctype.lower().startswith("application/sdp"):
        return "%s: POST want 201 application/sdp, got %s %r: %s" % (p.name, status, ctype, body[:300])
    if not location:
        return "%s: 201 without a Location header" % p.name
    p.location = urllib.parse.urljoin(args.url + "/", location)
    await asyncio.wait_for(pc.setRemoteDescription(RTCSessionDescription(body, "answer")), 5)
    try:
        await asyncio.wait_for(p.dtls.wait(), 8)
    except asyncio.TimeoutError:
        pass
    if p.t_dtls is None:
        return "%s: DTLS not connected within 8 s (ice %s, connection %s)" % (p.name, pc.iceConnectionState, pc.connectionState)
    return None


def template(positions):
    return {"canvas": {"width": CANVAS_W, "height": CANVAS_H, "fps": 30, "background": "#101010"},
            "positions": [{"participant": n, "source": "camera",
                           "rect": {"x": x, "y": y, "width": w, "height": h}, "contentMode": "fill"}
                          for n, (x, y, w, h) in positions]}


def find_recording(args, answered):
    names = [answered, args.rec_file]
    cands = []
    for n in names:
        if not n:
            continue
        if os.path.isabs(n):
            cands.append(n)
        else:
            for d in ([args.recordings_dir] if args.recordings_dir else []) + [os.path.join(os.getcwd(), "recordings"), os.getcwd()]:
                cands.append(os.path.join(d, n))
    return cands


async def scenario(args, peers, out):
    c = out["checks"]
    A, B, C = peers
    # --- join (one after the other: the grid follows the join order) ------------------------
    for p in peers:
        err = await join(p, args)
        if err:
            c["join"] = err
            return
    c["join"] = None
    t_all = now()
    out["join"] = {p.name: {"msPostToDtls": E.ms(p.t_post, p.t_dtls)} for p in peers}

    # --- 1. grid of 3: the mixes and the composite ------------------------------------------
    await asyncio.sleep(max(0.0, t_all + args.settle - now()))
    grid3 = {GRID3["tl"]: "alice", GRID3["tr"]: "bob", GRID3["bc"]: "carol"}
    others = lambda p, gone=(): [q.name for q in peers if q is not p and q.name not in gone]
    res = {}
    for p in peers:
        ok, secs, detail, data = await wait_for(lambda p=p: judge_audio(p, others(p), [p.name], t_all, 1.5), 2.5)
        res[p.name + "Audio"] = {"ok": ok, "extraS": secs, "tones": data}
        if not ok:
            c["grid3"] = "%s's mix: %s (shares %s)" % (p.name, detail, data)
        ok, secs, detail, data = await wait_for(lambda p=p: judge_layout(p, t_all, grid3), 2.5)
        res[p.name + "Video"] = {"ok": ok, "extraS": secs, "seen": data}
        if not ok:
            # the grid may place the three differently: accept any order, but say so
            if data and sorted(data.values()) == ["alice", "bob", "carol"]:
                res[p.name + "Video"]["note"] = "grid order differs from the join order"
            else:
                c["grid3"] = "%s's composite: %s" % (p.name, detail)
    c.setdefault("grid3", None)
    out["grid3"] = res

    # --- 2. a template swapping alice and bob -----------------------------------------------
    tpl = template([("alice", (0.5, 0, 0.5, 0.5)), ("bob", (0, 0, 0.5, 0.5)), ("carol", (0.25, 0.5, 0.5, 0.5))])
    swapped = {GRID3["tr"]: "alice", GRID3["tl"]: "bob", GRID3["bc"]: "carol"}
    t0 = now()
    status, body = await ahttp("PUT", "%s/v1/rooms/%s/layout" % (args.url, args.room), tpl)
    res = {"putStatus": status}
    if status != 200:
        c["template"] = "PUT layout: want 200, got %s: %s" % (status, body[:300])
    else:
        times = {}
        for p in peers:
            ok, _, detail, data = await wait_for(lambda p=p: judge_layout(p, t0, swapped), max(0.2, t0 + 3.5 - now()))
            times[p.name] = round(now() - t0, 2) if ok else None
            if not ok:
                c["template"] = "%s's composite 3.5 s after the PUT: %s" % (p.name, detail)
                break
        res["sToSwap"] = times
        c.setdefault("template", None)
        # back to the grid preset (the leave check below wants it)
        t0 = now()
        status, body = await ahttp("PUT", "%s/v1/rooms/%s/layout" % (args.url, args.room), {"preset": "grid"})
        res["gridPutStatus"] = status
        if status != 200:
            c["template"] = "PUT {\"preset\": \"grid\"}: want 200, got %s: %s" % (status, body[:300])
        else:
            seen_back = out["grid3"].get("aliceVideo", {}).get("seen")
            want_back = {xy: seen_back["%d,%d" % xy] for xy in grid3} if seen_back and \
                sorted(seen_back.values()) == ["alice", "bob", "carol"] else grid3
            ok, secs, detail, _ = await wait_for(lambda: judge_layout(A, t0, want_back), 3.5)
            res["sBackToGrid"] = secs if ok else None
            if not ok and c["template"] is None:
                c["template"] = "alice's composite 3.5 s after PUT preset grid: %s" % detail
    out["template"] = res

    # --- 3. alice stops hearing bob ---------------------------------------------------------
    t0 = now()
    status, body = await ahttp("PATCH", A.location, {"hear": {"bob": False}})
    res = {"patchStatus": status}
    if status != 200:
        c["hear"] = "PATCH alice hear bob=false: want 200, got %s: %s" % (status, body[:300])
    else:
        ok, _, detail, data = await wait_for(lambda: judge_audio(A, ["carol"], ["bob"], t0 + 0.1, 0.5), 2.5)
        res["sAliceStopsHearingBob"] = round(now() - t0, 2) if ok else None
        res["aliceTones"] = data
        if not ok:
            c["hear"] = "alice 2.5 s after the PATCH: %s (shares %s)" % (detail, data)
        # Waited for too: on a busy machine carol's aiortc may not have taken a second of audio yet.
        ok, _, detail, data = await wait_for(lambda: judge_audio(C, ["alice", "bob"], ["carol"], t0 + 0.1, 1.0), 2.5)
        res["carolTones"] = data
        if not ok:
            c["hear"] = (c.get("hear") or "") + " carol (should be unchanged): %s" % detail
        c.setdefault("hear", None)
    out["hear"] = res

    # --- 4. one participant's camera on its own: a viewer, and a subscription in carol's session
    out["subscribe"] = res = {}
    async def sees_alice(sink, since, key, what):
        """None once `sink` decodes alice's camera as sent (bounded at 8 s), else why not."""
        ok, _, detail, data = await wait_for(lambda: judge_track(sink, since, "alice"), 8, interval=0.02)
        res[key + "MsPostToFirstFrame"], res[key + "Seen"] = E.ms(since, sink.t_first), data
        return None if ok else "%s 8 s after its POST: %s%s" % (what, detail, diagnosis(sink, since))

    viewers = []
    alice_view, _, t_post, err = await view_track(args, "alice", viewers)
    bob_view, bob_view_location, _, err_bob = await view_track(args, "bob", viewers)
    out["bobViewer"] = bob_view_location
    out["_viewers"] = viewers
    if err or err_bob:
        c["subscribe"] = err or err_bob
    else:
        c["subscribe"] = await sees_alice(alice_view, t_post, "viewer", "the viewer of alice's camera")
    if c.get("subscribe") is None:
        sink, mid, err = await add_receiver(C)
        subscriptions = C.location + "/subscriptions"
        if err:
            c["subscribe"] = "carol: " + err
        else:
            t0 = now()
            status, body = await ahttp("POST", subscriptions, {"participant": "alice", "source": "camera"})
            answered = json.loads(body) if status == 200 else {}
            res["first"] = {"status": status, "answer": answered}
            if status != 200 or answered.get("count") != 1 or answered.get("mid") != mid:
                c["subscribe"] = "carol's subscription: want 200 with count 1 on mid %s, got %s: %s" % (mid, status, body[:300])
            else:
                c["subscribe"] = await sees_alice(sink, t0, "subscription", "carol's subscribed m-line")
            if c.get("subscribe") is None:
                status, body = await ahttp("POST", subscriptions, {"participant": "alice", "source": "camera"})
                again = json.loads(body) if status == 200 else {}
                status_down, body_down = await ahttp("DELETE", subscriptions + "/alice/camera")
                down = json.loads(body_down) if status_down == 200 else {}
                # What the host forwards, counted in packets (~15 a second): aiortc's jitter
                # buffer holds every frame behind one missing packet until it comes (it asks
                # again only at its next gap), so under the loss step's 5 % each way its decoded
                # frames stall for seconds while the stream goes on.
                frames, packets = sink.frames, await packets_received(sink)
                await asyncio.sleep(2.0)
                still, still_packets = sink.frames - frames, (await packets_received(sink) or 0) - (packets or 0)
                status_zero, body_zero = await ahttp("DELETE", subscriptions + "/alice/camera")
                zero = json.loads(body_zero) if status_zero == 200 else {}
                await asyncio.sleep(0.5)
                frames, packets = sink.frames, await packets_received(sink)
                await asyncio.sleep(1.5)
                after, after_packets = sink.frames - frames, (await packets_received(sink) or 0) - (packets or 0)
                res["counts"] = [again.get("count"), down.get("count"), zero.get("count")]
                res["framesAtCount1"], res["framesAfterZero"] = still, after
                res["packetsAtCount1"], res["packetsAfterZero"] = still_packets, after_packets
                if again.get("count") != 2 or again.get("mid") != mid:
                    c["subscribe"] = "subscribing again: want count 2 on mid %s, got %s: %s" % (mid, status, body[:300])
                elif down.get("count") != 1 or still_packets < 10:
                    c["subscribe"] = "one DELETE: want count 1 and packets still coming, got %s (%d packets, %d frames in 2 s)" % (
                        body_down[:200], still_packets, still)
                elif zero.get("count") != 0 or after > 0 or after_packets > 0:
                    c["subscribe"] = "second DELETE: want count 0 and nothing more, got %s (%d packets, %d frames in 1.5 s)" % (
                        body_zero[:200], after_packets, after)
    c.setdefault("subscribe", None)

    # --- 5. a recording ---------------------------------------------------------------------
    out["recording"] = res = {}
    if args.skip_recording:
        res["skipped"] = "--skip-recording"
        c["recording"] = "SKIPPED"
    else:
        for f in find_recording(args, None):
            if os.path.isfile(f):
                os.remove(f)
        status, body = await ahttp("POST", "%s/v1/rooms/%s/recordings" % (args.url, args.room), {"file": args.rec_file})
        res["postStatus"] = status
        rid = answered = None
        try:
            j = json.loads(body)
            rid, answered = j.get("id"), j.get("file")
        except ValueError:
            pass
        if status != 201 or rid is None:
            c["recording"] = "POST recordings: want 201 {id, file}, got %s: %s" % (status, body[:300])
        else:
            res["file"] = answered
            await asyncio.sleep(args.record_seconds)
            t0 = now()
            status, body = await ahttp("DELETE", "%s/v1/rooms/%s/recordings/%s" % (args.url, args.room, urllib.parse.quote(str(rid))), timeout=8)
            res["deleteStatus"], res["msDelete"] = status, round((now() - t0) * 1000)
            path = next((f for f in find_recording(args, answered) if os.path.isfile(f)), None)
            if status != 200:
                c["recording"] = "DELETE recording: want 200, got %s: %s" % (status, body[:300])
            elif path is None:
                c["recording"] = "no file found for %r (looked at %s)" % (answered, find_recording(args, answered))
            elif not shutil.which("ffprobe"):
                res["note"] = "ffprobe missing: streams not checked"
            else:
                res["path"], res["bytes"] = path, os.path.getsize(path)
                pr = await asyncio.to_thread(subprocess.run, ["ffprobe", "-v", "error", "-show_entries",
                                             "stream=codec_name,codec_type:format=duration", "-of", "json", path],
                                             capture_output=True, text=True, timeout=10)
                try:
                    info = json.loads(pr.stdout)
                except ValueError:
                    info = {}
                codecs = sorted(s.get("codec_name") for s in info.get("streams", []))
                res["codecs"] = codecs
                res["duration"] = info.get("format", {}).get("duration")
                try:
                    dur = float(res["duration"])
                except (TypeError, ValueError):
                    dur = None
                if "vp8" not in codecs or "opus" not in codecs:
                    c["recording"] = "ffprobe %s: streams %s, want vp8 and opus (%s)" % (path, codecs, pr.stderr.strip()[:200])
                elif dur is None or not (0.5 * args.record_seconds <= dur <= args.record_seconds + 3):
                    c["recording"] = "ffprobe %s: duration %s s for a %.1f s recording" % (path, res["duration"], args.record_seconds)
                if not args.keep_recording:
                    os.remove(path)
        c.setdefault("recording", None)

    # --- 6. bob leaves ----------------------------------------------------------------------
    t0 = now()
    status, body = await ahttp("DELETE", B.location)
    out["leave"] = res = {"deleteStatus": status}
    if status != 204:
        c["leave"] = "DELETE bob: want 204, got %s: %s" % (status, body[:300])
    else:
        B.location = None
        for p, hear in ((A, ["carol"]), (C, ["alice"])):
            ok, _, detail, data = await wait_for(lambda p=p, hear=hear: judge_audio(p, hear, ["bob"], t0 + 0.1, 0.5), max(0.2, t0 + 2.5 - now()))
            res["s%sStopsHearingBob" % p.name.capitalize()] = round(now() - t0, 2) if ok else None
            res[p.name + "Tones"] = data
            if not ok:
                c["leave"] = "%s 2.5 s after bob's DELETE: %s (shares %s)" % (p.name, detail, data)
        for p in (A, C):
            ok, _, detail, data = await wait_for(lambda p=p: judge_two_tiles(p, t0, "alice", "carol", "bob"), max(0.2, t0 + 3.0 - now()))
            res["s%sTwoTiles" % p.name.capitalize()] = round(now() - t0, 2) if ok else None
            res[p.name + "Seen"] = data
            if not ok:
                c["leave"] = "%s's composite 3 s after bob's DELETE: %s" % (p.name, detail)
        if out.get("bobViewer"):
            # Its track ended: the host said BYE and let the viewer go.
            def viewers_left():
                status, body = http("GET", "%s/v1/rooms/%s" % (args.url, args.room))
                count = json.loads(body).get("viewers") if status == 200 else None
                return count == 1, "viewers %s" % count, count
            ok, secs, detail, _ = await wait_for(viewers_left, max(0.2, t0 + 3.0 - now()))
            status, _ = await ahttp("DELETE", out["bobViewer"])
            res["sBobViewerClosed"], res["bobViewerDeleteStatus"] = (secs if ok else None), status
            if not ok or status != 404:
                c["leave"] = "the viewer of bob's camera 3 s after bob left: %s, its DELETE answered %s (want 404)" % (detail, status)
        c.setdefault("leave", None)


async def run(args, peers, out):
    try:
        await scenario(args, peers, out)
    finally:
        for pc in out.pop("_viewers", []):
            try:
                await asyncio.wait_for(pc.close(), 3)
            except Exception:
                pass
        for p in peers:
            if p.location:
                try:
                    await asyncio.wait_for(ahttp("DELETE", p.location, timeout=2), 3)
                except Exception:
                    pass
        for p in peers:
            for t in p.tasks:
                t.cancel()
            if p.pc:
                try:
                    await asyncio.wait_for(p.pc.close(), 3)
                except Exception:
                    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="the host, http://127.0.0.1:PORT")
    ap.add_argument("--room", default="interop")
    ap.add_argument("--settle", type=float, default=4, help="seconds after all joined before the first check")
    ap.add_argument("--record-seconds", type=float, default=2)
    ap.add_argument("--rec-file", default="interop-room.webm")
    ap.add_argument("--recordings-dir", default=None, help="the host's recordings folder (default: CWD/recordings)")
    ap.add_argument("--keep-recording", action="store_true")
    ap.add_argument("--skip-recording", action="store_true")
    ap.add_argument("--timeout", type=float, default=50, help="hard bound of the whole run")
    args = ap.parse_args()
    args.url = args.url.rstrip("/")

    peers = [Peer(*x) for x in PEOPLE]
    out = {"peer": "room", "room": args.room, "checks": {}}
    t_start = now()
    try:
        asyncio.run(asyncio.wait_for(run(args, peers, out), args.timeout))
    except asyncio.TimeoutError:
        out["checks"]["timeout"] = "run exceeded its hard bound of %.0f s" % args.timeout
    except Exception as e:
        out["checks"]["error"] = "%s: %s" % (type(e).__name__, e)
    out["seconds"] = round(now() - t_start, 1)
    out["media"] = {p.name: {"msPostToFirstMixedAudio": E.ms(p.t_post, p.t_audio),
                             "msPostToFirstCompositeFrame": E.ms(p.t_post, p.t_video),
                             "videoFrames": p.video_frames, "videoSizes": p.sizes} for p in peers}
    failed = {k: v for k, v in out["checks"].items() if v is not None and v != "SKIPPED"}
    out["checks"] = {k: ("ok" if v is None else "skipped" if v == "SKIPPED" else "FAIL") for k, v in out["checks"].items()}
    out["ok"] = not failed and all(k in out["checks"] for k in ("join", "grid3", "template", "hear", "subscribe", "recording", "leave"))
    if not failed and not out["ok"]:
        failed["incomplete"] = "not every check ran: %s" % sorted(out["checks"])
    print(json.dumps(out), flush=True)
    for k, v in failed.items():
        print("room_aiortc: FAIL %s: %s" % (k, v), file=sys.stderr)
    if not failed:
        skipped = [k for k, v in out["checks"].items() if v == "skipped"]
        print("room_aiortc: PASS" + (" (skipped: %s)" % ", ".join(skipped) if skipped else ""), file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
