#!/usr/bin/env python3
"""Interop: headless Chromium calls the host's echo endpoint and checks what comes back.

Stdlib only (no WebDriver). Run inside a loopback-only network namespace (see run.sh).
It writes a tone WAV (--tone Hz) for Chromium's fake microphone, serves echo_page.html on
127.0.0.1 from a small local HTTP server, starts Chromium headless on it and waits (bounded)
for the page to POST its measurements to /result.

How the page reaches the host: by default the page POSTs its offer to its own origin
(`/v1/echo` on the local server), which forwards it to --url and returns the host's answer
unchanged: no CORS involved, the test is about the media path. With --cors the page POSTs
straight to --url from another origin, which exercises the host's CORS preflight handling
(Access-Control-Allow-Origin *, Location exposed) as a web page on another site would.

Checks (each a line `echo_chromium: FAIL <check>: <detail>` on stderr when it fails):
  post        201 answer
  dtls        DTLS connected within --connect-timeout of the POST
  cipher      transport srtpCipher is --expect-cipher ('any' skips)
  video       inbound video framesDecoded > 0
  videoSize   frameWidth x frameHeight is --width x --height (the fake camera's 640x480)
  audio       inbound audio totalSamplesReceived > 0
  tone        the AnalyserNode's dominant frequency is --tone (within --tone-tolerance Hz)
  level       the received audio has a real level (RMS above --min-level-dbfs)
Prints one JSON line of measurements on stdout; exit 0 only when every check passed.

usage: echo_chromium.py --url http://127.0.0.1:PORT/v1/echo [--seconds 10] [--tone 660]
                        [--expect-cipher AEAD_AES_128_GCM] [--cors]
"""
import argparse, http.server, json, math, os, shutil, signal, struct, subprocess, sys, tempfile
import threading, time, urllib.error, urllib.parse, urllib.request, wave

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.path.join(HERE, "echo_page.html")

CHROMIUM_FLAGS = [
    "--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
    "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
    "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required",
    "--disable-features=WebRtcHideLocalIpsWithMdns", "--no-first-run",
    "--no-default-browser-check", "--disable-background-networking",
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
]


def write_tone_wav(path, hz, seconds=10, rate=48000, amplitude=0.3):
    """Mono s16 WAV of a pure tone; Chromium loops it as the fake microphone."""
    n = int(seconds * rate)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<h", int(round(amplitude * 32767 * math.sin(2 * math.pi * hz * i / rate))))
                               for i in range(n)))


class State:
    url = None           # the host's echo URL (for the same-origin proxy)
    http_timeout = 5.0
    verbose = False
    result = None
    done = threading.Event()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def _send(self, status, body=b"", ctype="text/plain", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if urllib.parse.urlparse(self.path).path == "/echo_page.html":
            with open(PAGE, "rb") as f:
                self._send(200, f.read(), "text/html; charset=utf-8")
        elif self.path == "/favicon.ico":
            self._send(204)
        else:
            self._send(404, b"not found")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/result":
            try:
                State.result = json.loads(body)
            except ValueError:
                State.result = {"error": "unreadable result: %r" % body[:200]}
            self._send(204)
            State.done.set()
        elif self.path == "/log":
            if State.verbose:
                print("page: " + body.decode("utf-8", "replace"), file=sys.stderr, flush=True)
            self._send(204)
        elif self.path == "/v1/echo":   # same-origin proxy to the host
            try:
                req = urllib.request.Request(State.url, data=body, method="POST", headers={
                    "Content-Type": self.headers.get("Content-Type", "application/sdp")})
                with urllib.request.urlopen(req, timeout=State.http_timeout) as r:
                    status, ctype, loc, out = r.status, r.headers.get("Content-Type", ""), r.headers.get("Location"), r.read()
            except urllib.error.HTTPError as e:
                status, ctype, loc, out = e.code, e.headers.get("Content-Type", ""), None, e.read()
            except Exception as e:
                status, ctype, loc, out = 502, "text/plain", None, ("proxy: %s" % e).encode()
            self._send(status, out, ctype or "application/octet-stream", [("Location", loc)] if loc else [])
        else:
            self._send(404, b"not found")


def chromium_binary():
    for c in ("chromium", "chromium-browser"):
        p = shutil.which(c)
        if p:
            return p
    return "/usr/bin/chromium"


def evaluate(args, r, checks):
    if r.get("httpStatus") != 201:
        checks["post"] = r.get("error") or "POST answered %s" % r.get("httpStatus")
        return
    checks["post"] = None
    if r.get("msPostToDtlsConnected") is None:
        checks["dtls"] = r.get("error") or "DTLS never connected"
        return
    checks["dtls"] = None
    if r.get("error"):
        checks["page"] = r["error"]
    st = r.get("stats") or {}
    tr, v, a = st.get("transport") or {}, st.get("video") or {}, st.get("audio") or {}
    if args.expect_cipher.lower() != "any":
        # The spec names it AEAD_AES_128_GCM; Chromium 156 reports SRTP_AEAD_AES_128_GCM.
        norm = lambda x: (x or "").upper().replace("SRTP_", "", 1)
        checks["cipher"] = None if norm(tr.get("srtpCipher")) == norm(args.expect_cipher) else \
            "srtpCipher %s, want %s" % (tr.get("srtpCipher"), args.expect_cipher)
    if args.tcp_only:
        pair = tr.get("selectedCandidatePair") or ""
        checks["tcp"] = None if pair.endswith("/tcp host") and r.get("answerTcpCandidates") else \
            "the selected pair is %r (answer had %s TCP candidates), want the host's TCP candidate" % (pair, r.get("answerTcpCandidates"))
    checks["video"] = None if (v.get("framesDecoded") or 0) > 0 else "no echoed video frame decoded (%s)" % v
    if (v.get("framesDecoded") or 0) > 0:
        size = "%sx%s" % (v.get("frameWidth"), v.get("frameHeight"))
        want = "%dx%d" % (args.width, args.height)
        checks["videoSize"] = None if size == want else "decoded %s, want %s (sent %s)" % (size, want, r.get("sentVideoSize"))
    checks["audio"] = None if (a.get("totalSamplesReceived") or 0) > 0 else "no echoed audio samples (%s)" % a
    an = r.get("audioAnalyser") or {}
    if (a.get("totalSamplesReceived") or 0) > 0:
        hz, level = an.get("toneHz"), an.get("levelDbfs")
        checks["tone"] = None if hz is not None and abs(hz - args.tone) <= args.tone_tolerance else \
            "dominant frequency %s Hz, sent %s Hz (tolerance %s; analyser %s)" % (hz, args.tone, args.tone_tolerance, an)
        checks["level"] = None if level is not None and level > args.min_level_dbfs else \
            "RMS %s dBFS, want > %s (silence?)" % (level, args.min_level_dbfs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="the host's echo endpoint, http://127.0.0.1:PORT/v1/echo")
    ap.add_argument("--seconds", type=float, default=10, help="how long the call runs after DTLS connects")
    ap.add_argument("--tone", type=float, default=660, help="tone of the fake microphone's WAV")
    ap.add_argument("--tone-tolerance", type=float, default=15)
    ap.add_argument("--min-level-dbfs", type=float, default=-45)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--expect-cipher", default="AEAD_AES_128_GCM", help="getStats srtpCipher (with or without SRTP_), or 'any'")
    ap.add_argument("--cors", action="store_true", help="POST from the page straight to --url (cross-origin)")
    ap.add_argument("--connect-timeout", type=float, default=8, help="POST to DTLS connected")
    ap.add_argument("--timeout", type=float, default=None, help="hard bound of the whole run (default seconds + 30)")
    ap.add_argument("--tcp-only", action="store_true",
                    help="drop the host's UDP candidates from its answer: the call must go over ICE-TCP")
    ap.add_argument("--chromium", default=chromium_binary())
    ap.add_argument("--verbose", action="store_true", help="echo the page's log lines")
    args = ap.parse_args()
    hard = args.timeout or args.seconds + 30
    State.url, State.verbose = args.url, args.verbose

    tmp = tempfile.mkdtemp(prefix="echo-chromium-")
    wav = os.path.join(tmp, "tone.wav")
    write_tone_wav(wav, args.tone)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    echo = args.url if args.cors else "/v1/echo"
    page = "http://127.0.0.1:%d/echo_page.html?%s" % (srv.server_address[1], urllib.parse.urlencode({
        "echo": echo, "seconds": args.seconds, "connect_ms": int(args.connect_timeout * 1000),
        "tcp_only": "1" if args.tcp_only else "0"}))

    cmd = [args.chromium, *CHROMIUM_FLAGS, "--use-file-for-fake-audio-capture=" + wav,
           "--user-data-dir=" + os.path.join(tmp, "profile"), page]
    logpath = os.path.join(tmp, "chromium.log")
    t_start = time.monotonic()
    with open(logpath, "wb") as log:
        try:
            proc = subprocess.Popen(cmd, env=dict(os.environ, HOME=tmp), stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as e:
            print(json.dumps({"peer": "chromium", "ok": False, "checks": {"browser": "FAIL"}}))
            print("echo_chromium: FAIL browser: cannot start %s: %s" % (args.chromium, e), file=sys.stderr)
            return 1
        try:
            while not State.done.wait(0.2):
                if time.monotonic() - t_start > hard or proc.poll() is not None:
                    break
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(10)
            except Exception:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(5)
                except Exception:
                    pass
            srv.shutdown()
            srv.server_close()

    r = State.result
    checks = {}
    if r is None:
        why = "Chromium exited (%s)" % proc.returncode if proc.returncode not in (None, -15) and \
            time.monotonic() - t_start <= hard else "no result from the page within %.0f s" % hard
        checks["page"] = why
        r = {}
    else:
        evaluate(args, r, checks)

    st = r.get("stats") or {}
    tr, v, a = st.get("transport") or {}, st.get("video") or {}, st.get("audio") or {}
    an = r.get("audioAnalyser") or {}
    out = {
        "peer": "chromium-tcp" if args.tcp_only else "chromium", "mode": "cors" if args.cors else "same-origin proxy",
        "checks": {k: ("ok" if x is None else "FAIL") for k, x in checks.items()},
        "httpStatus": r.get("httpStatus"), "location": r.get("location"), "answerIceLite": r.get("answerIceLite"),
        "srtpCipher": tr.get("srtpCipher"), "dtlsCipher": tr.get("dtlsCipher"), "dtlsRole": tr.get("dtlsRole"),
        "dtlsState": tr.get("dtlsState"), "selectedCandidatePair": tr.get("selectedCandidatePair"),
        "msPostToDtlsConnected": r.get("msPostToDtlsConnected"),
        "msPostToFirstFrameDecoded": r.get("msPostToFirstFrameDecoded"),
        "msPostToFirstAudioSamples": r.get("msPostToFirstAudioSamples"),
        "framesDecoded": v.get("framesDecoded"), "frameSize": "%sx%s" % (v.get("frameWidth"), v.get("frameHeight"))
        if v else None, "videoCodec": v.get("codec"), "videoPacketsLost": v.get("packetsLost"),
        "videoNackCount": v.get("nackCount"), "videoPliCount": v.get("pliCount"),
        "totalSamplesReceived": a.get("totalSamplesReceived"), "concealedSamples": a.get("concealedSamples"),
        "audioCodec": a.get("codec"), "audioLevel": a.get("audioLevel"),
        "toneHz": an.get("toneHz"), "levelDbfs": an.get("levelDbfs"), "analyserSamples": an.get("samples"),
        "userAgent": r.get("ua"),
    }
    failed = {k: x for k, x in checks.items() if x is not None}
    out["ok"] = not failed
    print(json.dumps(out), flush=True)
    for k, x in failed.items():
        print("echo_chromium: FAIL %s: %s" % (k, x), file=sys.stderr)
    if failed:
        if r.get("events"):
            print("echo_chromium: page events %s" % json.dumps(r["events"]), file=sys.stderr)
        with open(logpath, "rb") as f:   # less the noise of a machine without D-Bus or sound card
            lines = [l for l in f.read().decode("utf-8", "replace").splitlines()
                     if "dbus" not in l and not l.startswith("ALSA lib") and "alsa_util" not in l]
        print("echo_chromium: chromium log tail:\n" + "\n".join(lines[-25:]), file=sys.stderr)
    else:
        print("echo_chromium: PASS", file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
