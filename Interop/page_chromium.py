#!/usr/bin/env python3
"""Interop: the host's own web page (GET /) joins a room from headless Chromium, with two aiortc
participants in the same room, and the page's own script says what it decodes and hears.

Run with the venv python (.venv/bin/python), inside a loopback-only network namespace (see
run.sh). Reuses room_aiortc.py's participants: alice sends 440 Hz and red, bob 660 Hz and green.
Chromium opens --url/?room=R&identity=chromium-page&autojoin=1 with a fake camera and a fake
microphone playing --page-tone Hz in bursts (a WAV file), and is driven through the DevTools protocol over
--remote-debugging-pipe (no WebDriver, no websocket: JSON messages ending in NUL on the
browser's fds 3 and 4). The page is asked, with Runtime.evaluate, for `tessera.selfCheck(...)`,
the self-check its script (Sources/Server/Web/app.js) offers anyone in the browser's console.
Checks, polled together until all hold (and --hold-seconds have passed) or --check-seconds pass
after everyone is connected:

  page        the page loads, exposes window.tessera and its connection reaches "connected"
  join        alice and bob: 201 + answer, DTLS connected
  composite   the page decodes the composite: getStats framesDecoded increasing, the <video>
              and the decoded frames 1280x720, and the <video> presents frames
              (requestVideoFrameCallback): the main encoding, not the lower one (Chromium's
              REMB of a still composite is no shortfall for the host)
  mix         the page's mix (an AnalyserNode in the page) holds 440 Hz and 660 Hz at least
              --min-above-floor dB above its noise floor, and the page's own tone at least
              --absent-db below the weaker of the two (the host does not send a guest itself)
  colours     at the centre of alice's and bob's rects in GET /v1/rooms/R/layout the page's
              composite shows red and green
  simulcast   the page sends its camera in three simulcast layers (rids q, h, f) and the host
              decodes one of them (GET /v1/rooms/R says which, and its picture's width)
  pageHeard   alice and bob hear the page's tone (so the page's microphone reaches the room and
              its absence from the page's own mix means something)
  iceRestart  then the page restarts ICE as it does after a failure (PATCH with an offer with new
              credentials): the host answers with new credentials, the checks with them are
              answered, and the composite goes on, on the same connection
  mLines      then the page adds a second video m-line sending a yellow picture (a screen share)
              by renegotiation: the host answers it and says trackPublished screen, and the page's
              composite shows it in the grid's main tile; the page stops it by renegotiation: the
              host answers it stopped (port 0), says trackEnded, and the main tile is given back
  senderMute  then the page disables its camera track (Chromium sends black frames) and enables it
              again: the host says trackMuted and trackUnmuted ("sender muted", "sender unmuted")
  rejoin      then the host forgets the page's session (DELETE, as a restarted host would) and the
              page recovers as after a failed connection: its ICE restart is refused, it joins
              again on a new connection, and the composite is decoded there

Prints one JSON line of measurements on stdout; exit 0 only when every check passed, otherwise 1
with `page_chromium: FAIL <check>: <detail>` lines on stderr (and `WARN` lines for what passed
but is worth saying). The whole run is bounded by --timeout.

usage: page_chromium.py --url http://127.0.0.1:PORT [--room page-test] [--timeout 120]
"""
import argparse, asyncio, collections, fcntl, json, os, shutil, signal, subprocess, sys, tempfile, threading, time
import urllib.parse, wave

sys.dont_write_bytecode = True   # no Interop/__pycache__ from the imports below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import echo_chromium as C   # noqa: E402  (stdlib only: Chromium's flags and binary)
import room_aiortc as R     # noqa: E402  (aiortc participants; patches aioice for loopback)

import numpy as np          # noqa: E402

CANVAS = (R.CANVAS_W, R.CANVAS_H)     # the host's default composite
IDENTITY = "chromium-page"


class DevTools:
    """Chromium under the DevTools protocol over --remote-debugging-pipe: commands are JSON
    messages ending in NUL written to the browser's fd 3; answers and events come back on fd 4."""

    def __init__(self, cmd, env, log):
        # Our ends stay above 10 and close-on-exec, so the child can dup2 its ends to 3 and 4.
        high = lambda fd: (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10), os.close(fd))[0]
        cmd_r, cmd_w = map(high, os.pipe())
        ev_r, ev_w = map(high, os.pipe())

        def child_fds():
            os.dup2(cmd_r, 3)
            os.dup2(ev_w, 4)
        self.proc = subprocess.Popen(cmd + ["--remote-debugging-pipe"], env=env, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, preexec_fn=child_fds,
                                     close_fds=False, start_new_session=True)
        os.close(cmd_r)
        os.close(ev_w)
        self._out, self._in = cmd_w, ev_r
        self._next = 0
        self._answers = {}
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self.closed = False
        self.session = None                             # the page's, once attached
        self.console = collections.deque(maxlen=20)   # the page's console lines and exceptions
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._in, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            *messages, buf = buf.split(b"\0")
            for raw in messages:
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._answers[msg["id"]] = msg
                        self._cond.notify_all()
                elif msg.get("method") == "Runtime.consoleAPICalled":
                    p = msg["params"]
                    self.console.append("console.%s %s" % (p["type"], " ".join(str(a.get("value", a.get("description")))
                                                                               for a in p.get("args", []))))
                elif msg.get("method") == "Runtime.exceptionThrown":
                    d = msg["params"]["exceptionDetails"]
                    self.console.append("exception %s" % d.get("exception", {}).get("description", d.get("text")))
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def call(self, method, params=None, session=None, timeout=10.0):
        with self._lock:
            self._next += 1
            mid = self._next
            msg = {"id": mid, "method": method, "params": params or {}}
            if session:
                msg["sessionId"] = session
            os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._answers:
                left = deadline - time.monotonic()
                if self.closed or left <= 0:
                    raise RuntimeError("%s: %s" % (method, "the browser closed its pipe" if self.closed
                                                   else "no answer within %.0f s" % timeout))
                self._cond.wait(left)
            answer = self._answers.pop(mid)
        if "error" in answer:
            raise RuntimeError("%s: %s" % (method, answer["error"].get("message")))
        return answer["result"]

    def evaluate(self, session, expression, timeout=10.0):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                      session, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise RuntimeError("page threw: %s" % d.get("exception", {}).get("description", d.get("text")))
        return r["result"].get("value")

    def stop(self):
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(wait)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass


def write_bursts_wav(path, hz, rate=48000, on=0.3, off=0.3, periods=16, amplitude=0.3):
    """Mono s16 WAV of a tone in bursts (on, off seconds; 5 ms ramps), which Chromium loops as the
    fake microphone. Bursts, not a steady tone: the page keeps Chromium's noise suppressor on (as a
    conference page should), and it learns a steady tone as noise and removes it within seconds."""
    t = np.arange(int(rate * (on + off))) / rate
    gate = np.clip(np.minimum(t, on - t) / 0.005, 0, 1)
    one = np.sin(2 * np.pi * hz * t) * gate * amplitude
    data = np.round(np.tile(one, periods) * 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(data.tobytes())


def rect_centres(layout, names):
    """{name: [x, y]}: the centre (fractions of the canvas) of each named participant's camera tile."""
    out = {}
    for pos in (layout or {}).get("positions", []):
        if pos.get("participant") in names and pos.get("source", "camera") == "camera":
            r = pos["rect"]
            out[pos["participant"]] = [r["x"] + r["width"] / 2, r["y"] + r["height"] / 2]
    return out


def judge_composite(sc, first):
    """A problem, or None. first: the composite part of the first self-check with decoded frames."""
    c = sc["composite"]
    want = "%dx%d" % CANVAS
    shown = "%sx%s" % (c["width"], c["height"])
    problems = []
    if c["framesDecoded"] <= 0:
        problems.append("no composite frame decoded (keyFramesDecoded %s, packetsLost %s)" % (c["keyFramesDecoded"], c["packetsLost"]))
    elif first is None or c["framesDecoded"] <= first["framesDecoded"]:
        problems.append("framesDecoded not increasing (%s, first seen %s)" % (c["framesDecoded"], first and first["framesDecoded"]))
    if shown != want or c.get("decodedSize") != want:
        problems.append("the <video> is %s and the decoded frames %s, want %s (the browser's estimate: %s)"
                        % (shown, c.get("decodedSize"), want, sc.get("incomingBitrateEstimate")))
    if first is None or c["framesPresented"] <= first["framesPresented"]:
        problems.append("the <video> presents no new frame (requestVideoFrameCallback count %s)" % c["framesPresented"])
    return "; ".join(problems) or None


def judge_simulcast(room, out):
    """A problem, or None: the host took the page's camera as three layers and decodes one."""
    me = next((p for p in (room or {}).get("participants", []) if p.get("identity") == IDENTITY), None)
    camera = next((t for t in (me or {}).get("tracks", []) if t.get("source") == "camera"), None)
    if camera is None:
        return "GET room has no camera track of the page: %r" % (me,)
    out["simulcast"] = {k: camera.get(k) for k in ("layers", "layer", "width", "height")}
    if [l.get("rid") for l in camera.get("layers") or []] != ["q", "h", "f"]:
        return "the host did not take the page's three layers: %r" % (camera,)
    if camera.get("layer") not in ("q", "h", "f") or not camera.get("width"):
        return "the host decodes no layer of the page's camera: %r" % (camera,)
    return None


def judge_mix(sc, tones, own, args):
    m = sc["mix"]
    if "tones" not in m:
        return "no mix to analyse (samplesReceived %s)" % m["samplesReceived"]
    level = {t["hz"]: t for t in m["tones"]}
    problems = ["%s (%g Hz) only %.1f dB above the floor (%.1f dB), want >= %g"
                % (n, hz, level[hz]["aboveFloorDb"], m["floorDb"], args.min_above_floor)
                for n, hz in tones.items() if level[hz]["aboveFloorDb"] < args.min_above_floor]
    weakest = min(level[hz]["db"] for hz in tones.values())
    if weakest - level[own]["db"] < args.absent_db:
        problems.append("the page's own tone (%g Hz) is in its mix: %.1f dB, only %.1f dB below the weaker other tone, want >= %g"
                        % (own, level[own]["db"], weakest - level[own]["db"], args.absent_db))
    if m.get("contextState") != "running":
        problems.append("AudioContext %s" % m.get("contextState"))
    return "; ".join(problems) or None


def judge_colours(sc, centres, names):
    if set(centres) != set(names):
        return "GET layout has no camera tile for %s" % sorted(set(names) - set(centres))
    seen = {n: R.classify(c["rgb"]) if c else None for n, c in zip(centres, sc.get("colours") or [None] * len(centres))}
    bad = ["%s's tile centre %s is %s, want %s's colour %s" % (n, ["%.3f" % v for v in centres[n]], seen[n], n,
                                                               "#%02x%02x%02x" % R.COLORS[n])
           for n in names if seen[n] != n]
    return "; ".join(bad) or None


async def scenario(args, dev, peers, out, checks, t_start):
    tones = {p.name: p.hz for p in peers}
    names = list(tones)
    ev = lambda expr, timeout=10.0: asyncio.to_thread(dev.evaluate, dev.session, expr, timeout)

    async def attach():
        """The page's tab, once Chromium has opened it; a session on it with Runtime enabled."""
        while True:
            # A Chromium starting beside a busy build can take well over 10 s to answer its first call.
            targets = (await asyncio.to_thread(dev.call, "Target.getTargets", None, None, 45.0))["targetInfos"]
            page = next((t for t in targets if t["type"] == "page" and t["url"].startswith(args.url)), None)
            if page:
                s = (await asyncio.to_thread(dev.call, "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}))["sessionId"]
                await asyncio.to_thread(dev.call, "Runtime.enable", None, s)
                dev.session = s
                return
            await asyncio.sleep(0.1)

    async def page_connected():
        while True:
            sc = await ev("window.tessera ? tessera.selfCheck() : null")
            if sc and sc["connection"] == "connected":
                return sc
            await asyncio.sleep(0.2)

    async def join_all():
        for p in peers:   # one after the other, like room_aiortc (the grid follows the join order)
            err = await R.join(p, args)
            if err:
                return err
        return None

    # The page and the aiortc participants join at the same time.
    joining = asyncio.ensure_future(join_all())
    try:
        # Chromium's own start is not the host's to answer for (beside a build it took over 10 s once):
        # the page's bound runs from the tab being there.
        await asyncio.wait_for(attach(), args.browser_seconds)
        await asyncio.wait_for(page_connected(), args.page_seconds)
        checks["page"] = None
        out["msToPageConnected"] = round((R.now() - t_start) * 1000)
    except asyncio.TimeoutError:
        status = None
        if dev.session:
            try:
                status = await ev("document.getElementById('status').textContent", 2)
            except Exception as e:
                status = str(e)
        checks["page"] = ("Chromium opened no tab within %g s" % args.browser_seconds if not dev.session else
                          "not connected within %g s of its tab opening (page status: %r)" % (args.page_seconds, status))
    err = await joining
    checks["join"] = err
    if err or checks["page"]:
        return
    out["msToAllJoined"] = round((R.now() - t_start) * 1000)

    # Poll everything together until it all holds or --check-seconds pass.
    t_all, first, last = R.now(), None, {}
    expr = "tessera.selfCheck(%s)"
    while True:
        status, body = await R.ahttp("GET", "%s/v1/rooms/%s/layout" % (args.url, urllib.parse.quote(args.room)))
        layout = json.loads(body) if status == 200 else None
        centres = rect_centres(layout, names)
        sc = await ev(expr % json.dumps({"tones": [*tones.values(), args.page_tone], "points": list(centres.values())}))
        fresh = first is None and sc["composite"]["framesDecoded"] > 0
        first = sc["composite"] if fresh else first
        composite = "first frames decoded, waiting for more" if fresh else judge_composite(sc, first)
        last = {
            "composite": composite,
            "mix": judge_mix(sc, tones, args.page_tone, args),
            "colours": judge_colours(sc, centres, names) if status == 200 else "GET layout: %s %s" % (status, body[:200]),
        }
        status, body = await R.ahttp("GET", "%s/v1/rooms/%s" % (args.url, urllib.parse.quote(args.room)))
        last["simulcast"] = judge_simulcast(json.loads(body) if status == 200 else None, out)
        heard = {}   # (the aiortc participants hearing each other is room_aiortc's business)
        for p in peers:
            ok, detail, shares = R.judge_audio(p, ["page"], [], t_all, 1.0, dict(tones, page=args.page_tone))
            heard[p.name] = (ok, detail, shares)
        last["pageHeard"] = "; ".join("%s's mix: %s" % (n, d) for n, (ok, d, _) in heard.items() if not ok) or None
        # Held for --hold-seconds: the page keeps the main encoding past the browser's first REMBs.
        if (all(v is None for v in last.values()) and R.now() - t_all >= args.hold_seconds) or R.now() - t_all >= args.check_seconds:
            break
        await asyncio.sleep(0.2)
    checks.update(last)
    out["sChecking"] = round(R.now() - t_all, 1)
    # The page's recovery from a failed connection: an ICE restart by renegotiation (PATCH with an
    # offer with new credentials). The host must answer with new credentials, the checks with them
    # must be answered, and the composite must go on, on the same connection.
    restart = await ev("tessera.restartIce()", 20)
    out["iceRestart"] = restart
    ok = restart and restart.get("connection") == "connected" and restart.get("samePeerConnection") \
        and restart.get("hostUfragChanged") and restart["after"]["responses"] > restart["before"]["responses"] \
        and restart["after"]["frames"] > restart["before"]["frames"] + 30
    checks["iceRestart"] = None if ok else "the ICE restart did not carry on: %r" % (restart,)
    added = await ev("tessera.addAndStopVideo()", 30)
    out["mLines"] = added
    ok = added and not added.get("error") and added.get("published") and added.get("shownInMainTile") \
        and added.get("answeredStopped") and added.get("ended") and added.get("tileGivenBack") and added.get("connection") == "connected"
    checks["mLines"] = None if ok else "adding and stopping a video m-line: %r" % (added,)
    muted = await ev("tessera.muteCameraBySender()", 20)
    out["senderMute"] = muted
    ok = muted and muted.get("muted") and muted.get("unmuted")
    checks["senderMute"] = None if ok else "the page's camera disabled and enabled again (black frames): %r" % (muted,)
    rejoin = await ev("tessera.rejoinAfterLostSession()", 30)
    out["rejoin"] = rejoin
    ok = rejoin and rejoin.get("rejoined") and rejoin.get("newSession") and rejoin["after"] > rejoin["before"] + 30
    checks["rejoin"] = None if ok else "the page did not join again after its session was lost: %r" % (rejoin,)
    out["selfCheck"] = sc
    out["layout"] = {n: [round(v, 3) for v in xy] for n, xy in centres.items()}
    out["aiortcMixShares"] = {n: shares for n, (_, _, shares) in heard.items()}


async def run(args, dev, peers, out, checks, t_start):
    try:
        await scenario(args, dev, peers, out, checks, t_start)
    finally:
        # The page leaves (DELETE) like a user pressing Leave; then the aiortc participants.
        if dev.session:
            try:
                await asyncio.to_thread(dev.evaluate, dev.session, "leave()", 3)
            except Exception:
                pass
        for p in peers:
            if p.location:
                try:
                    await asyncio.wait_for(R.ahttp("DELETE", p.location, timeout=2), 3)
                except Exception:
                    pass
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
    ap.add_argument("--room", default="page-test")
    # Far from alice's and bob's tones: the page keeps Chromium's echo canceller on (as a
    # conference page should), and it removes a microphone tone near what the page plays
    # (550 Hz, between 440 and 660, was gone entirely).
    ap.add_argument("--page-tone", type=float, default=1800, help="the page's fake microphone (Hz)")
    ap.add_argument("--browser-seconds", type=float, default=60, help="Chromium's start to its tab open")
    ap.add_argument("--page-seconds", type=float, default=15, help="the tab open to the page connected")
    ap.add_argument("--check-seconds", type=float, default=20, help="everyone connected to every check holding")
    ap.add_argument("--hold-seconds", type=float, default=8,
                    help="the checks must hold this long after everyone connected (Chromium's REMBs start at about 5 s)")
    ap.add_argument("--min-above-floor", type=float, default=30, help="dB a heard tone stands above the mix's floor")
    ap.add_argument("--absent-db", type=float, default=20, help="dB the page's own tone lies below the others'")
    ap.add_argument("--timeout", type=float, default=120, help="hard bound of the whole run")
    ap.add_argument("--chromium", default=C.chromium_binary())
    args = ap.parse_args()
    args.url = args.url.rstrip("/")

    peers = [R.Peer(*x) for x in R.PEOPLE[:2]]
    out = {"peer": "page", "room": args.room}
    checks = {}
    tmp = tempfile.mkdtemp(prefix="tessera-page-")
    wav = os.path.join(tmp, "tone.wav")
    write_bursts_wav(wav, args.page_tone)
    page = "%s/?%s" % (args.url, urllib.parse.urlencode({"room": args.room, "identity": IDENTITY, "name": "Headless", "autojoin": 1}))
    logpath = os.path.join(tmp, "chromium.log")
    t_start = R.now()
    dev = None
    with open(logpath, "wb") as log:
        try:
            dev = DevTools([args.chromium, *C.CHROMIUM_FLAGS, "--use-file-for-fake-audio-capture=" + wav,
                            "--user-data-dir=" + os.path.join(tmp, "profile"), page],
                           dict(os.environ, HOME=tmp), log)
            asyncio.run(asyncio.wait_for(run(args, dev, peers, out, checks, t_start), args.timeout))
        except asyncio.TimeoutError:
            checks["timeout"] = "run exceeded its hard bound of %.0f s" % args.timeout
        except Exception as e:
            checks["error"] = "%s: %s" % (type(e).__name__, e)
        finally:
            if dev:
                dev.stop()
    out["seconds"] = round(R.now() - t_start, 1)
    failed = {k: v for k, v in checks.items() if v is not None}
    out["checks"] = {k: "ok" if v is None else "FAIL" for k, v in checks.items()}
    want = ("page", "join", "composite", "mix", "colours", "simulcast", "pageHeard")
    if not failed and not all(k in checks for k in want):
        failed["incomplete"] = "not every check ran: %s" % sorted(checks)
    out["ok"] = not failed
    print(json.dumps(out), flush=True)
    for k, v in failed.items():
        print("page_chromium: FAIL %s: %s" % (k, v), file=sys.stderr)
    if failed:
        if dev and dev.console:
            print("page_chromium: page console:\n  " + "\n  ".join(dev.console), file=sys.stderr)
        with open(logpath, "rb") as f:   # less the noise of a machine without D-Bus or sound card
            lines = [l for l in f.read().decode("utf-8", "replace").splitlines()
                     if "dbus" not in l and not l.startswith("ALSA lib") and "alsa_util" not in l]
        print("page_chromium: chromium log tail:\n" + "\n".join(lines[-15:]), file=sys.stderr)
    else:
        print("page_chromium: PASS", file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
