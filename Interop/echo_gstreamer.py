#!/usr/bin/python3
"""Interop: GStreamer webrtcbin calls the host's echo endpoint and checks what comes back.

Run with the system python (/usr/bin/python3, for gi), inside a loopback-only network
namespace (see run.sh). webrtcbin (max-bundle) sends a sine tone (audiotestsrc, Opus) and
640x480 videotestsrc frames (VP8, NACK on); the offer goes to --url once ICE gathering is
complete (bounded); the answer is set; for --seconds after the connection is up it measures
what comes back (decodebin): decoded video frames and their size, the dominant frequency of
the audio (`spectrum`) and its level (`level`).

Checks (each a line `echo_gstreamer: FAIL <check>: <detail>` on stderr when it fails):
  post, dtls (connection-state connected within --connect-timeout of the POST),
  video (decoded frames > 0), videoSize (--width x --height), audio (decoded buffers > 0),
  tone (dominant frequency within --tone-tolerance Hz of --tone), level (RMS above
  --min-level-dbfs).
  profile (the SRTP profile read from dtlsdec is --expect-profile; 'any' skips).
GStreamer 1.22's DTLS offers only SRTP_AES128_CM_SHA1_80, so that is what the host must accept
from it (its AEAD-GCM preference cannot apply): the profile check confirms that fallback.
Its DTLS certificate is RSA: as DTLS server the host must accept an RSA client certificate.

With --dtx the peer joins a room instead (--url is a join URL, .../v1/rooms/R/participants?identity=ID)
and sends silence through `opusenc dtx=true`, as a muted GStreamer client would: its payloader
then sends an Opus frame of no bytes (the TOC byte alone, RFC 6716 §3.2.1) every 20 ms, and no
RFC 6464 level (webrtcbin adds none). The tone and level checks give way to one, dtx: the host's
`tessera_audio_silent_packets_skipped` (GET /metrics) counts at least half the call's 50 packets a
second, none of them decoded; the video check takes the room's composite, of any size.

Prints one JSON line of measurements on stdout; exit 0 only when every check passed.
Workarounds (see shared notes): libnice never gathers on loopback by itself, so 127.0.0.1 is
added to webrtcbin's NiceAgent; the ICE object and the promise replies are kept referenced.

usage: echo_gstreamer.py --url http://127.0.0.1:PORT/v1/echo [--seconds 10] [--tone 550]
       echo_gstreamer.py --dtx --url 'http://127.0.0.1:PORT/v1/rooms/R/participants?identity=ID' [--seconds 10]
"""
import argparse, json, re, sys, threading, time, urllib.error, urllib.parse, urllib.request

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("Nice", "0.1")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC, Nice  # noqa: E402

RATE = 48000
BANDS = 4800          # spectrum: 5 Hz per band up to 24 kHz


def post_offer(url, sdp, timeout):
    req = urllib.request.Request(url, data=sdp.encode(), method="POST",
                                 headers={"Content-Type": "application/sdp"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.headers.get("Location"), \
                resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), None, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return None, "", None, "POST %s failed: %s" % (url, getattr(e, "reason", e))


def prewrap_pad_types():
    """Create PyGObject's wrapper classes for the private pad types on this (main) thread.

    webrtcbin's and decodebin's src pads (GstWebRTCBinSrcPad, GstDecodePad: types outside any
    typelib) first reach Python in pad-added, on streaming threads, audio and video at once;
    PyGObject can then race building their wrapper class and hand the callback an object whose
    class is no Gst.Pad ("argument 1: Must be Gst.Pad, not GstWebRTCBinSrcPad"), leaving the
    pad unlinked. Instantiating each type once here builds the classes first."""
    from gi.repository import GObject
    Gst.ElementFactory.make("webrtcbin")
    Gst.ElementFactory.make("decodebin")      # registers GstDecodePad
    for name in ("GstWebRTCBinSrcPad", "GstDecodePad"):
        gtype = GObject.type_from_name(name)
        if gtype:
            try:
                GObject.new(gtype, direction=Gst.PadDirection.SRC, name="prewrap")
            except Exception:
                pass


def host_metric(join_url, name, timeout):
    """One gauge of the host's /metrics (at the join URL's scheme, host and port); None if absent."""
    parts = urllib.parse.urlsplit(join_url)
    try:
        with urllib.request.urlopen("%s://%s/metrics" % (parts.scheme, parts.netloc), timeout=timeout) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return None
    m = re.search(r"^%s (\d+)" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else None


def numbers_of(structure_text, field):
    """The numbers of a list/array field in a GstStructure's text (PyGObject cannot read
    GstValueList / GValueArray fields directly)."""
    m = re.search(field + r"=\(\w+\)[{<]([^}>]*)[}>]", structure_text)
    if not m:
        m = re.search(field + r"=\(\w+\)([-0-9.e+]+)", structure_text)
    return [float(x) for x in re.findall(r"[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?", m.group(1))] if m else []


class Peer:
    def __init__(self, args):
        self.args = args
        self.loop = GLib.MainLoop()
        self.checks = {}
        self.out = {"peer": "gstreamer"}
        self.keep = []            # promise replies and the like: must stay referenced
        self.t_post = self.t_dtls = self.t_video = self.t_audio = None
        self.video_frames = 0
        self.video_sizes = {}
        self.audio_buffers = 0
        self.t_first_spectrum_ok = None
        self.peaks = []           # (hz, dB) per spectrum message after warm-up
        self.levels = []          # RMS dBFS per level message after warm-up
        self.finished = False
        self.lock = threading.Lock()

        a = args
        self.pipe = Gst.parse_launch(
            "webrtcbin name=webrtc bundle-policy=max-bundle latency=100 "
            "audiotestsrc is-live=true %s ! audioconvert ! audioresample ! "
            "audio/x-raw,rate=48000,channels=1 ! opusenc %s ! rtpopuspay pt=111 ! "
            "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! webrtc. "
            "videotestsrc is-live=true pattern=ball ! video/x-raw,width=%d,height=%d,framerate=%d/1 ! "
            "videoconvert ! vp8enc deadline=1 cpu-used=8 keyframe-max-dist=60 ! rtpvp8pay pt=96 ! "
            "application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000 ! webrtc. "
            % ("wave=silence" if a.dtx else "wave=sine freq=%s volume=0.3" % a.tone, "dtx=true" if a.dtx else "",
               a.width, a.height, a.fps))
        self.webrtc = self.pipe.get_by_name("webrtc")
        # Keep this reference for the whole run: dropping it unrefs webrtcbin's ICE object.
        self.ice = self.webrtc.get_property("ice-agent")
        try:
            self.ice.set_property("ice-tcp", False)
        except TypeError:
            pass
        agent = self.ice.get_property("agent")
        addr = Nice.Address()
        addr.set_from_string("127.0.0.1")
        agent.add_local_address(addr)

        self.webrtc.connect("on-negotiation-needed", self.on_negotiation_needed)
        self.webrtc.connect("pad-added", self.on_incoming_stream)
        self.webrtc.connect("notify::connection-state", self.on_connection_state)
        bus = self.pipe.get_bus()
        bus.add_signal_watch()
        bus.connect("message", self.on_message)

    # --- signalling ---------------------------------------------------------------------
    def on_negotiation_needed(self, element):
        for i in range(8):
            t = element.emit("get-transceiver", i)
            if t is None:
                break
            try:
                t.set_property("do-nack", True)
            except TypeError:
                pass
        promise = Gst.Promise.new_with_change_func(self.on_offer_created, None)
        element.emit("create-offer", None, promise)

    def on_offer_created(self, promise, _):
        promise.wait()
        reply = promise.get_reply()
        self.keep.append(reply)   # keep alive while its offer is in use
        offer = reply.get_value("offer")
        self.keep.append(offer)
        self.webrtc.emit("set-local-description", offer, Gst.Promise.new())
        GLib.idle_add(self.wait_gathering, time.monotonic() + self.args.gather_timeout)

    def wait_gathering(self, deadline):
        state = self.webrtc.get_property("ice-gathering-state")
        if state != GstWebRTC.WebRTCICEGatheringState.COMPLETE and time.monotonic() < deadline:
            GLib.timeout_add(50, self.wait_gathering, deadline)
            return False
        self.out["gathering"] = state.value_nick
        GLib.timeout_add(100, self.send_offer)   # let the last candidates reach the description
        return False

    def send_offer(self):
        sdp = self.webrtc.get_property("local-description").sdp.as_text()
        self.t_post = time.monotonic()

        def worker():
            res = post_offer(self.args.url, sdp, self.args.http_timeout)
            GLib.idle_add(self.on_answer, res)
        threading.Thread(target=worker, daemon=True).start()
        return False

    def on_answer(self, res):
        status, ctype, location, body = res
        self.out["httpStatus"], self.out["location"] = status, location
        if status != 201 or not ctype.lower().startswith("application/sdp"):
            self.checks["post"] = "want 201 application/sdp, got %s %r: %s" % (status, ctype, body[:300])
            self.finish()
            return False
        self.checks["post"] = None
        self.out["answerIceLite"] = bool(re.search(r"^a=ice-lite", body, re.M))
        ok, msg = GstSdp.SDPMessage.new_from_text(body)
        if ok != GstSdp.SDPResult.OK:
            self.checks["post"] = "unreadable SDP answer"
            self.finish()
            return False
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, msg)
        self.keep.append(answer)
        self.webrtc.emit("set-remote-description", answer, Gst.Promise.new())
        GLib.timeout_add(int(self.args.connect_timeout * 1000), self.connect_deadline)
        return False

    def on_connection_state(self, *_):
        state = self.webrtc.get_property("connection-state")
        if state == GstWebRTC.WebRTCPeerConnectionState.CONNECTED and self.t_dtls is None and self.t_post:
            self.t_dtls = time.monotonic()
            GLib.idle_add(self.connected)
        elif state == GstWebRTC.WebRTCPeerConnectionState.FAILED:
            self.out["connectionFailed"] = True
            GLib.idle_add(self.connect_deadline)   # no need to wait for the deadline

    def connected(self):
        self.checks["dtls"] = None
        self.out["profile"] = self.srtp_profile()
        GLib.timeout_add(int(self.args.seconds * 1000), self.finish)
        return False

    def srtp_profile(self):
        """The profile the DTLS handshake selected, from dtlsdec's srtp-cipher/srtp-auth."""
        it = self.pipe.iterate_recurse()
        while True:
            res, el = it.next()
            if res != Gst.IteratorResult.OK:
                return None
            f = el.get_factory()
            if f and f.get_name() == "dtlsdec":
                cipher, auth = el.get_property("srtp-cipher"), el.get_property("srtp-auth")
                names = {(1, 2): "SRTP_AES128_CM_SHA1_80", (1, 1): "SRTP_AES128_CM_SHA1_32"}
                return names.get((cipher, auth), "cipher %s auth %s" % (cipher, auth))

    def connect_deadline(self):
        if self.t_dtls is None and not self.finished:
            self.checks["dtls"] = "not connected within %.0f s of the POST (connection %s, ice %s)" % (
                self.args.connect_timeout, self.webrtc.get_property("connection-state").value_nick,
                self.webrtc.get_property("ice-connection-state").value_nick)
            self.finish()
        return False

    # --- received media -----------------------------------------------------------------
    def on_incoming_stream(self, _, pad):
        if pad.direction != Gst.PadDirection.SRC:
            return
        decodebin = Gst.ElementFactory.make("decodebin")
        decodebin.connect("pad-added", self.on_decoded_pad)
        self.pipe.add(decodebin)
        decodebin.sync_state_with_parent()
        pad.link(decodebin.get_static_pad("sink"))

    def on_decoded_pad(self, _, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        name = caps.get_structure(0).get_name()
        if name.startswith("video"):
            chain = "queue ! fakesink name=vsink sync=false async=false"
        elif name.startswith("audio"):
            chain = ("queue ! audioconvert ! audioresample ! audio/x-raw,rate=%d,channels=1 ! "
                     "level interval=250000000 post-messages=true ! "
                     "spectrum bands=%d threshold=-100 interval=250000000 post-messages=true message-magnitude=true ! "
                     "fakesink name=asink sync=false async=false" % (RATE, BANDS))
        else:
            return
        bin_ = Gst.parse_bin_from_description(chain, True)
        self.pipe.add(bin_)
        bin_.sync_state_with_parent()
        pad.link(bin_.get_static_pad("sink"))
        sink_pad = bin_.get_static_pad("sink")
        if name.startswith("video"):
            sink_pad.add_probe(Gst.PadProbeType.BUFFER, self.on_video_buffer)
        else:
            sink_pad.add_probe(Gst.PadProbeType.BUFFER, self.on_audio_buffer)

    def on_video_buffer(self, pad, info):
        now = time.monotonic()
        with self.lock:
            if self.t_video is None:
                self.t_video = now
            self.video_frames += 1
            caps = pad.get_current_caps()
            if caps:
                s = caps.get_structure(0)
                size = "%dx%d" % (s.get_int("width")[1], s.get_int("height")[1])
                self.video_sizes[size] = self.video_sizes.get(size, 0) + 1
        return Gst.PadProbeReturn.OK

    def on_audio_buffer(self, pad, info):
        with self.lock:
            if self.t_audio is None:
                self.t_audio = time.monotonic()
            self.audio_buffers += 1
        return Gst.PadProbeReturn.OK

    def on_message(self, bus, msg):
        t = msg.type
        if t == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            self.checks["pipeline"] = "%s: %s (%s)" % (msg.src.get_name(), err.message, (dbg or "")[:300])
            self.finish()
        elif t == Gst.MessageType.ELEMENT:
            s = msg.get_structure()
            warm = self.t_audio is not None and time.monotonic() - self.t_audio > 1.0
            if s is None or not warm:
                return
            if s.get_name() == "spectrum":
                mags = numbers_of(s.to_string(), "magnitude")
                if len(mags) > 3:
                    k = max(range(1, len(mags) - 1), key=lambda i: mags[i])
                    a, b, c = mags[k - 1], mags[k], mags[k + 1]
                    d = 0.5 * (a - c) / (a - 2 * b + c) if (a - 2 * b + c) != 0 else 0.0
                    width = (RATE / 2) / len(mags)
                    self.peaks.append(((k + 0.5 + d) * width, b))
            elif s.get_name() == "level":
                rms = numbers_of(s.to_string(), "rms")
                if rms:
                    self.levels.append(rms[0])

    # --- end ----------------------------------------------------------------------------
    def finish(self):
        if not self.finished:
            self.finished = True
            if self.args.dtx:   # while this guest is still in the room (the gauge counts its packets)
                self.out["silentPacketsSkipped"] = host_metric(self.args.url, "tessera_audio_silent_packets_skipped",
                                                               self.args.http_timeout)
            self.loop.quit()
        return False

    def run(self):
        self.pipe.set_state(Gst.State.PLAYING)
        GLib.timeout_add(int(self.args.timeout * 1000), self.on_hard_timeout)
        self.loop.run()
        self.pipe.set_state(Gst.State.NULL)

    def on_hard_timeout(self):
        if not self.finished:
            self.checks["timeout"] = "run exceeded its hard bound of %.0f s" % self.args.timeout
            self.finish()
        return False

    def evaluate(self):
        a, c = self.args, self.checks
        if "post" not in c:
            c.setdefault("post", "no offer was sent (gathering %s)" % self.out.get("gathering"))
        if c.get("post") is not None:
            return
        if c.get("dtls", "not connected") is not None:
            c.setdefault("dtls", "not connected")
            return
        if a.expect_profile.lower() != "any":
            got = self.out.get("profile")
            c["profile"] = None if got == a.expect_profile else "negotiated %s, want %s" % (got, a.expect_profile)
        c["video"] = None if self.video_frames > 0 else "no echoed video frame decoded"
        if a.dtx:
            c["audio"] = None if self.audio_buffers > 0 else "no audio of the room decoded"
            skipped, want = self.out.get("silentPacketsSkipped"), int(25 * a.seconds)
            c["dtx"] = None if skipped is not None and skipped >= want else \
                "the host skipped %s packets undecoded as DTX silence, want >= %d (50 a second sent)" % (skipped, want)
            return
        if self.video_frames:
            want = "%dx%d" % (a.width, a.height)
            bad = {k: v for k, v in self.video_sizes.items() if k != want}
            c["videoSize"] = None if not bad else "decoded %s, want %s" % (self.video_sizes, want)
        c["audio"] = None if self.audio_buffers > 0 else "no echoed audio decoded"
        if self.audio_buffers:
            hz, level = self.out["toneHz"], self.out["levelDbfs"]
            c["tone"] = None if hz is not None and abs(hz - a.tone) <= a.tone_tolerance else \
                "dominant frequency %s Hz, sent %s Hz (tolerance %s)" % (hz, a.tone, a.tone_tolerance)
            c["level"] = None if level is not None and level > a.min_level_dbfs else \
                "RMS %s dBFS, want > %s (silence?)" % (level, a.min_level_dbfs)

    def report(self):
        def ms(t):
            return None if t is None or self.t_post is None else round((t - self.t_post) * 1000, 1)

        def median(xs):
            return sorted(xs)[len(xs) // 2] if xs else None
        loud = [hz for hz, db in self.peaks if db > -80]
        hz = median(loud)
        level = median(self.levels)
        self.out.update({
            "msPostToDtlsConnected": ms(self.t_dtls), "msPostToFirstVideoFrame": ms(self.t_video),
            "msPostToFirstAudio": ms(self.t_audio), "videoFrames": self.video_frames,
            "videoSizes": self.video_sizes, "audioBuffers": self.audio_buffers,
            "toneHz": None if hz is None else round(hz, 1), "levelDbfs": None if level is None else round(level, 1),
            "spectrumSamples": len(self.peaks),
            "gstreamer": Gst.version_string(),
        })
        self.evaluate()
        failed = {k: v for k, v in self.checks.items() if v is not None}
        out = {"peer": "gstreamer", "checks": {k: ("ok" if v is None else "FAIL") for k, v in self.checks.items()}}
        out.update({k: v for k, v in self.out.items() if k != "peer"})
        out["ok"] = not failed
        print(json.dumps(out), flush=True)
        for k, v in failed.items():
            print("echo_gstreamer: FAIL %s: %s" % (k, v), file=sys.stderr)
        if not failed:
            print("echo_gstreamer: PASS", file=sys.stderr)
        return 0 if not failed else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--seconds", type=float, default=10, help="how long the call runs once connected")
    ap.add_argument("--tone", type=float, default=550)
    ap.add_argument("--tone-tolerance", type=float, default=15)
    ap.add_argument("--min-level-dbfs", type=float, default=-45)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--fps", type=int, default=15)
    ap.add_argument("--expect-profile", default="SRTP_AES128_CM_SHA1_80", help="or 'any'")
    ap.add_argument("--gather-timeout", type=float, default=3)
    ap.add_argument("--connect-timeout", type=float, default=8, help="POST to connected")
    ap.add_argument("--http-timeout", type=float, default=5)
    ap.add_argument("--timeout", type=float, default=None, help="hard bound of the whole run (default seconds + 20)")
    ap.add_argument("--dtx", action="store_true", help="join a room sending silence with Opus DTX (see above)")
    args = ap.parse_args()
    args.timeout = args.timeout or args.seconds + 20
    Gst.init(None)
    prewrap_pad_types()
    peer = Peer(args)
    peer.run()
    rc = peer.report()
    del peer.ice
    return rc


if __name__ == "__main__":
    sys.exit(main())
