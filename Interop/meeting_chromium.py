#!/usr/bin/env python3
"""Interop: the host's page as a meeting client, driven through its controls in headless
Chromium: two pages (ann, ben; each its own browser with a fake camera and a fake microphone
playing its own tone) and an aiortc guest (alice: 440 Hz, red 320x240) in one room. The test
presses the page's buttons (DOM clicks with a user gesture, real pointer drags and key presses
through the DevTools protocol) and checks what a person would see and hear:

  join        both pages join from the form; ben, who comes second, lists ann and alice at once
              and his events start with who is there; the invite link is the room's
  speaking    the people list marks a speaker and shows levels
  micMute     ann mutes her microphone: her tone leaves alice's and ben's mixes (the host says
              she is muted), and her browser sends under 10 audio packets a second (Opus DTX,
              which the host's answer asks for); unmuted, alice hears her again
  dontHear    ben presses "Don't hear" on alice: 440 Hz leaves ben's mix, not ann's
  pin         ben pins alice: her own camera plays beside the composite (320x240, red: as she
              sends it, not the composite); unpinned, it goes
  share       ann shares her screen (getDisplayMedia; Chromium's fake 800x600 screen): the host
              lists her screen track, the layout puts it in the largest tile, and ben's composite
              shows it there fitted (its picture inside, the letterbox beside it); stopped, the
              screen leaves the layout
  camera      ann stops her camera: the host says trackMuted, ben's list says "camera off"; and
              back
  template    ann (admin: the host has no auth) drags alice's tile in the template editor and
              moves it with the arrow keys, presses Save: the layout in use follows
  recording   ann starts a recording (both pages show the badge), stops it, and downloads it
              from the recordings list: the file plays in ffprobe (VP8 and Opus)
  errors      a second host with auth and a room limit of 2: a bad token says the host refused
              it; a third guest hears the room is full; a member token shows no admin controls;
              the page opened by a name other than localhost over http:// says to use https

With --screenshots DIR it saves the page at desktop and phone width (docs/images/).
Prints one JSON line of measurements; exit 0 only when every check passed, otherwise 1 with
`meeting_chromium: FAIL <check>: <detail>` lines on stderr. Bounded by --timeout.

usage: meeting_chromium.py --url http://127.0.0.1:PORT --tessera PATH [--room meeting] [--timeout 150]
"""
import argparse, asyncio, base64, glob, json, os, shutil, subprocess, sys, tempfile, urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import echo_chromium as C            # noqa: E402
import room_aiortc as R              # noqa: E402
from page_chromium import DevTools, write_bursts_wav   # noqa: E402

TONES = {"ann": 1800.0, "ben": 2600.0}
ALICE_RED = (230, 30, 30)
now = R.now


class Page:
    """One Chromium with the page open; `ev` evaluates in it as if the user had acted."""

    def __init__(self, name, url, tmp, extra=()):
        self.name = name
        folder = os.path.join(tmp, name)
        os.makedirs(folder)
        wav = os.path.join(folder, "tone.wav")
        write_bursts_wav(wav, TONES.get(name, 1000.0))
        self.downloads = os.path.join(folder, "downloads")
        os.makedirs(self.downloads)
        self.log = open(os.path.join(folder, "chromium.log"), "wb")
        self.url = url
        self.dev = DevTools([C.chromium_binary(), *C.CHROMIUM_FLAGS, *extra, "--use-file-for-fake-audio-capture=" + wav,
                             "--window-size=1280,900", "--user-data-dir=" + os.path.join(folder, "profile"), url],
                            dict(os.environ, HOME=folder), self.log)

    async def attach(self, seconds=30):
        t0 = now()
        while now() - t0 < seconds:
            try:   # a browser starting on a busy machine may not answer at once
                targets = (await asyncio.to_thread(self.dev.call, "Target.getTargets", None, None, 5))["targetInfos"]
            except RuntimeError:
                if self.dev.closed:
                    raise
                continue
            page = next((t for t in targets if t["type"] == "page" and t["url"].startswith(self.url.split("?")[0])), None)
            if page:
                s = (await asyncio.to_thread(self.dev.call, "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}))["sessionId"]
                self.dev.session = s
                await asyncio.to_thread(self.dev.call, "Runtime.enable", None, s)
                await asyncio.to_thread(self.dev.call, "Browser.setDownloadBehavior",
                                        {"behavior": "allow", "downloadPath": self.downloads})
                while not await self.ev("document.readyState === 'complete' && !!window.tessera"):
                    await asyncio.sleep(0.1)
                return
            await asyncio.sleep(0.1)
        raise RuntimeError("%s: the page did not open within %g s" % (self.name, seconds))

    async def ev(self, expression, timeout=10.0):
        r = await asyncio.to_thread(self.dev.call, "Runtime.evaluate",
                                    {"expression": expression, "awaitPromise": True, "returnByValue": True, "userGesture": True},
                                    self.dev.session, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise RuntimeError("%s's page threw: %s" % (self.name, d.get("exception", {}).get("description", d.get("text"))))
        return r["result"].get("value")

    async def click(self, selector):
        """Clicks the element as a person would (a user gesture); False when it is missing or disabled."""
        return await self.ev("(() => { const e = document.querySelector(%s); if (!e || e.disabled) return false; e.click(); return true; })()"
                             % json.dumps(selector))

    async def input(self, method, params):
        await asyncio.to_thread(self.dev.call, method, params, self.dev.session)

    async def check(self):
        return await self.ev("tessera.meetingCheck()")

    async def packets_sent(self):
        """The microphone's RTP packets sent so far (the browser's outbound-rtp statistics)."""
        return (await self.ev("tessera.selfCheck()", 15))["microphone"]["packetsSent"]

    async def mix(self, tones):
        return (await self.ev("tessera.selfCheck({tones: %s})" % json.dumps(tones), 15))["mix"]

    def stop(self):
        self.dev.stop()
        self.log.close()

    async def close(self):
        """Leaves (DELETE, as the Leave button does) if it can, then ends the browser."""
        try:
            await self.ev("leave()", 3)
        except Exception:
            pass
        self.stop()


async def until(fn, seconds, interval=0.25):
    """Polls the coroutine fn() -> (ok, data) until ok or `seconds`; (ok, seconds taken, data)."""
    t0 = now()
    while True:
        ok, data = await fn()
        if ok or now() - t0 >= seconds:
            return ok, round(now() - t0, 2), data
        await asyncio.sleep(interval)


def tone_db(mix, hz):
    return next((t["db"] for t in mix.get("tones", []) if t["hz"] == hz), -200)


def heard(mix, hz, reference_hz=None):
    """A tone stands 25 dB over the floor; or, against a heard reference tone, is 20 dB under it (False)."""
    above = next((t["aboveFloorDb"] for t in mix.get("tones", []) if t["hz"] == hz), 0)
    if reference_hz is None:
        return above >= 25
    return tone_db(mix, hz) > tone_db(mix, reference_hz) - 20


def green(rgb):
    return rgb[1] >= 100 and rgb[1] >= rgb[0] + 50 and rgb[1] >= rgb[2] + 50


async def scenario(args, ann, ben, alice, out, c):
    base, room = args.url, args.room
    room_url = "%s/v1/rooms/%s" % (base, room)

    async def room_state():
        status, body = await R.ahttp("GET", room_url)
        return json.loads(body) if status == 200 else None

    def person(state, identity):
        return next((p for p in (state or {}).get("participants", []) if p["identity"] == identity), None)

    async def connected(page):
        d = await page.check()
        return d["connection"] == "connected", d

    # --- join: alice (aiortc), then ann and ben from the form ----------------------------
    err = await R.join(alice, argparse.Namespace(url=base, room=room))
    if err:
        c["join"] = "alice: " + err
        return
    res = out["join"] = {}
    for page in (ann, ben):
        await page.attach()
        await page.ev("document.getElementById('name').value = %s" % json.dumps(page.name.title()))
        t0 = now()
        if not await page.click("#joinButton"):
            c["join"] = "%s: no Join button to press" % page.name
            return
        ok, secs, data = await until(lambda page=page: connected(page), 15)
        res[page.name + "SToConnected"] = secs
        if not ok:
            c["join"] = "%s not connected 15 s after Join: %s" % (page.name, {k: data.get(k) for k in ("connection", "message")})
            return
    # The page asks who is there once connected: a moment later on a busy machine.
    async def listed_everyone():
        d = await ben.check()
        return sorted(p["identity"] for p in d["people"]) == ["alice", "ann", "ben"], d
    _, secs, d = await until(listed_everyone, 5)
    listed = sorted(p["identity"] for p in d["people"])
    arrival = next((line for line in reversed(d["log"]) if "in the room:" in line), None)
    res.update(benListed=listed, benListedAfterS=secs, benArrival=arrival, invite=d["invite"])
    if listed != ["alice", "ann", "ben"]:
        c["join"] = "ben's list right after joining: %s" % listed
    elif not arrival or "alice" not in arrival or "Ann" not in arrival:
        c["join"] = "ben's events do not start with who is there: %r" % arrival
    elif d["invite"] != "%s/?room=%s" % (base, room):
        c["join"] = "the invite link is %r" % d["invite"]
    else:
        c["join"] = None

    # --- speaking: someone is marked, levels shown -----------------------------------------
    async def speaker_marked():
        d = await ben.check()
        state = await room_state()
        levels = {p["identity"]: p.get("audioLevel") for p in (state or {}).get("participants", [])}
        return any(p["speaking"] for p in d["people"]) and (levels.get("alice") or -127) > -60, {"levels": levels, "people": d["people"]}
    ok, secs, data = await until(speaker_marked, 8)
    out["speaking"] = {"s": secs, "levels": data["levels"]}
    c["speaking"] = None if ok else "no speaker marked in ben's list, or no level for alice: %s" % data

    # --- micMute: ann's tone leaves the others' mixes ---------------------------------------
    res = out["micMute"] = {}
    await ann.click("#micButton")
    t0 = now()

    async def ann_silent():
        m = await ben.mix([TONES["ann"], R.TONES["alice"]])
        ok_alice, _, shares = R.judge_audio(alice, [], ["ann"], t0 + 0.6, 1.0, TONES)
        ok = not heard(m, TONES["ann"], R.TONES["alice"]) and heard(m, R.TONES["alice"]) and ok_alice \
            and (shares or {}).get("ann", 1) < 0.01
        return ok, {"benMix": m["tones"], "aliceShares": shares}
    ok, secs, data = await until(ann_silent, 6)
    state = await room_state()
    res.update(sSilent=secs if ok else None, **data, hostMuted=(person(state, "ann") or {}).get("muted"))
    # Muted, her browser sends silence; the host's answer asked for Opus DTX (usedtx=1), so past
    # its 200 ms hangover it sends a packet every 400 ms or so, not 50 a second.
    before, t_before = await ann.packets_sent(), now()
    await asyncio.sleep(2.0)
    rate = (await ann.packets_sent() - before) / (now() - t_before)
    res["packetsPerSecondMuted"] = round(rate, 1)
    if not ok:
        c["micMute"] = "ann's tone still in the mixes 6 s after she muted: %s" % data
    elif not (person(state, "ann") or {}).get("muted", {}).get("audio"):
        c["micMute"] = "the host does not say ann is muted: %s" % person(state, "ann")
    elif rate > 10:
        c["micMute"] = "ann's browser sends %.1f audio packets a second while muted: no DTX (the answer's usedtx=1)" % rate
    else:
        await ann.click("#micButton")
        t1 = now()

        async def ann_back():
            ok, detail, shares = R.judge_audio(alice, ["ann"], [], t1 + 0.6, 1.0, TONES)
            return ok, shares
        ok, secs, data = await until(ann_back, 6)
        res["sBack"] = secs if ok else None
        c["micMute"] = None if ok else "alice does not hear ann again after she unmuted: %s" % data

    # --- dontHear: ben stops hearing alice, ann still does ------------------------------------
    res = out["dontHear"] = {}
    pressed = await ben.click("#people li[data-identity='alice'] button[data-action='hear']")

    async def alice_gone_for_ben():
        m = await ben.mix([R.TONES["alice"], TONES["ann"]])
        return not heard(m, R.TONES["alice"]) and heard(m, TONES["ann"]), m["tones"]
    ok, secs, data = await until(alice_gone_for_ben, 6)
    res.update(sSilent=secs if ok else None, benMix=data)
    ann_mix = await ann.mix([R.TONES["alice"]])
    res["annMix"] = ann_mix["tones"]
    if not pressed:
        c["dontHear"] = "no Don't hear button for alice in ben's list"
    elif not ok:
        c["dontHear"] = "ben still hears alice (or no longer ann) 6 s after Don't hear: %s" % data
    elif not heard(ann_mix, R.TONES["alice"]):
        c["dontHear"] = "ann stopped hearing alice too: %s" % ann_mix["tones"]
    else:
        await ben.click("#people li[data-identity='alice'] button[data-action='hear']")
        ok, secs, data = await until(lambda: ben_hears_alice_ok(ben), 6)
        c["dontHear"] = None if ok else "ben does not hear alice again after Hear: %s" % data

    # --- pin: alice's own camera beside the composite --------------------------------------
    res = out["pin"] = {}
    t0 = now()
    pressed = await ben.click("#people li[data-identity='alice'] button[data-action='pin']")

    async def pinned_alice():
        d = await ben.check()
        v = d.get("pinnedVideo") or {}
        rgb = (v.get("centre") or {}).get("rgb")
        ok = v.get("width") == 320 and v.get("height") == 240 and rgb and max(abs(rgb[i] - ALICE_RED[i]) for i in range(3)) <= 70
        return ok, v
    ok, secs, data = await until(pinned_alice, 8)
    res.update(msToFirstFrame=round(secs * 1000) if ok else None, seen=data)
    if not pressed:
        c["pin"] = "no Pin button for alice in ben's list"
    elif not ok:
        c["pin"] = "ben's pinned picture 8 s after Pin: %s" % data
    else:
        await ben.click("#people li[data-identity='alice'] button[data-action='pin']")
        ok, secs, data = await until(lambda: unpinned(ben), 5)
        c["pin"] = None if ok else "the pinned picture stayed after Unpin: %s" % data

    # --- share: ann's screen in the largest tile, fitted ------------------------------------
    res = out["share"] = {}
    pressed = await ann.click("#shareButton")

    async def shown():
        state = await room_state()
        screen = next((t for t in (person(state, "ann") or {}).get("tracks", []) if t["source"] == "screen"), None)
        positions = (state or {}).get("layout", {}).get("positions", [])
        largest = max(positions, key=lambda p: p["rect"]["width"] * p["rect"]["height"], default=None)
        if not screen or screen.get("state") != "live" or not largest or largest.get("source") != "screen" or not screen.get("width"):
            return False, {"screen": screen, "largest": largest}
        # Where the fitted picture lands on the canvas, and a letterbox bar beside it.
        canvas = state["layout"]["canvas"]
        r = largest["rect"]
        rw, rh = r["width"] * canvas["width"], r["height"] * canvas["height"]
        scale = min(rw / screen["width"], rh / screen["height"])
        w = screen["width"] * scale
        points = [[r["x"] + r["width"] / 2, r["y"] + r["height"] / 2 + 0.2 * r["height"]]]
        bar = (rw - w) / 2 / canvas["width"]
        if bar > 0.02:
            points.append([r["x"] + bar / 2, r["y"] + r["height"] / 2])
        sc = await ben.ev("tessera.selfCheck({points: %s})" % json.dumps(points))
        colours = [p["rgb"] if p else None for p in sc.get("colours", [])]
        ok = colours and colours[0] and green(colours[0]) and all(c2 and max(c2) < 60 for c2 in colours[1:])
        return ok, {"screen": {k: screen.get(k) for k in ("state", "width", "height", "rendering")}, "rect": r, "points": points,
                    "colours": colours}
    ok, secs, data = await until(shown, 10)
    res.update(sShown=secs if ok else None, **data)
    if not pressed:
        c["share"] = "no Share screen button to press"
    elif not ok:
        c["share"] = "ann's share not shown fitted in the largest tile 10 s after Share: %s" % data
    else:
        await ann.click("#shareButton")

        async def share_gone():
            state = await room_state()
            positions = (state or {}).get("layout", {}).get("positions", [])
            return state is not None and not any(p.get("source") == "screen" for p in positions), positions
        ok, secs, data = await until(share_gone, 8)
        res["sGone"] = secs if ok else None
        c["share"] = None if ok else "the screen stayed in the layout after Stop sharing: %s" % data

    # --- camera: off and on ------------------------------------------------------------------
    await ann.click("#cameraButton")

    async def camera_state(off):
        d = await ben.check()
        text = next((p["text"] for p in d["people"] if p["identity"] == "ann"), "")
        said = any("trackMuted ann camera" in line for line in d["log"]) if off else \
            any("trackUnmuted ann camera" in line for line in d["log"])
        return said and (("camera off" in text) == off), {"ann": text, "log": d["log"][:6]}
    ok, secs, data = await until(lambda: camera_state(True), 6)
    out["camera"] = {"sOff": secs if ok else None}
    if not ok:
        c["camera"] = "ben does not see ann's camera off: %s" % data
    else:
        await ann.click("#cameraButton")
        ok, secs, data = await until(lambda: camera_state(False), 6)
        out["camera"]["sOn"] = secs if ok else None
        c["camera"] = None if ok else "ben does not see ann's camera back: %s" % data

    # --- template: drag alice's tile, then the arrow keys, Save --------------------------------
    c["template"] = await template_check(ann, base, room, out)

    # --- recording: start, stop, download, ffprobe ----------------------------------------------
    c["recording"] = await recording_check(ann, ben, out)


async def ben_hears_alice_ok(ben):
    m = await ben.mix([R.TONES["alice"]])
    return heard(m, R.TONES["alice"]), m["tones"]


async def unpinned(page):
    d = await page.check()
    return d["pinnedVideo"] is None and d["pinned"] is None, d["pinnedVideo"]


async def layout_rect(base, room, identity):
    status, body = await R.ahttp("GET", "%s/v1/rooms/%s/layout" % (base, room))
    if status != 200:
        return None
    return next((p["rect"] for p in json.loads(body)["positions"] if p["participant"] == identity and p.get("source", "camera") == "camera"), None)


async def template_check(ann, base, room, out):
    res = out["template"] = {}
    await ann.click("#editorLoad")
    await asyncio.sleep(0.5)
    before = await layout_rect(base, room, "alice")
    box = await ann.ev("""(() => { const t = document.querySelector("#editor .tile[data-participant='alice']");
        if (!t) return null; t.scrollIntoView({block: 'center'}); const r = t.getBoundingClientRect(),
        b = document.getElementById('editor').getBoundingClientRect();
        return {x: r.x, y: r.y, w: r.width, h: r.height, boardW: b.width, boardH: b.height}; })()""")
    if not before or not box:
        return "no tile of alice in ann's template editor (layout rect %s, tile %s)" % (before, box)
    res["before"] = before
    # A real pointer drag: press in the tile, move by 10 % of the board to the right, release.
    x0, y0 = box["x"] + box["w"] / 2, box["y"] + box["h"] / 2
    dx = 0.1 * box["boardW"]
    await ann.input("Input.dispatchMouseEvent", {"type": "mousePressed", "x": x0, "y": y0, "button": "left", "clickCount": 1})
    for step in range(1, 6):
        await ann.input("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x0 + dx * step / 5, "y": y0, "button": "left", "buttons": 1})
    await ann.input("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": x0 + dx, "y": y0, "button": "left", "clickCount": 1})
    revision = await ann.ev("Number(document.getElementById('editor').dataset.revision)")
    await ann.click("#editorSave")
    want_x = min(1 - before["width"], before["x"] + 0.1)
    ok, secs, after = await until(lambda: rect_is(base, room, "alice", want_x, before["y"]), 5)
    res["afterDrag"] = after
    if not ok:
        return "alice's rect after the drag and Save: %s, want x %.3f (before %s)" % (after, want_x, before)
    # The keyboard: the tile focused, ArrowDown moves it 5 % down. (Save draws the tiles anew from
    # the host's answer: the one to focus is one of that drawing, not of the one before.)
    focused = await ann.ev("""(async () => {
        const board = document.getElementById('editor');
        for (let i = 0; i < 50 && Number(board.dataset.revision) <= %d; i++) await new Promise((r) => setTimeout(r, 100));
        const t = board.querySelector(".tile[data-participant='alice']");
        if (Number(board.dataset.revision) <= %d || !t) return false;
        t.focus();
        return document.activeElement === t; })()""" % (revision, revision))
    if not focused:
        return "alice's tile was not drawn anew by Save (revision %s) to focus" % revision
    for kind in ("keyDown", "keyUp"):
        await ann.input("Input.dispatchKeyEvent", {"type": kind, "key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 40})
    await ann.click("#editorSave")
    want_y = min(1 - after["height"], after["y"] + 0.05)
    ok, secs, keyed = await until(lambda: rect_is(base, room, "alice", after["x"], want_y), 5)
    res["afterKey"] = keyed
    return None if ok else "alice's rect after ArrowDown and Save: %s, want y %.3f" % (keyed, want_y)


async def rect_is(base, room, identity, x, y):
    r = await layout_rect(base, room, identity)
    return bool(r) and abs(r["x"] - x) <= 0.02 and abs(r["y"] - y) <= 0.02, r


async def recording_check(ann, ben, out):
    res = out["recording"] = {}
    if not await ann.click("#recordStart"):
        return "no Start recording button for ann"

    async def badges():
        a, b = await ann.check(), await ben.check()
        return a["recording"] and b["recording"], {"ann": a["recording"], "ben": b["recording"]}
    ok, secs, data = await until(badges, 5)
    if not ok:
        return "the recording badge after Start: %s" % data
    await asyncio.sleep(3)
    await ann.click("#recordStop")

    async def listed():
        d = await ann.check()
        return bool(d["recordings"]), d["recordings"]
    ok, secs, files = await until(listed, 8)
    res["listed"] = files
    if not ok:
        return "no recording to download in ann's list 8 s after Stop"
    file = files[-1]
    await ann.click("#recordings button[data-file=%s]" % json.dumps(file))

    async def downloaded():
        done = [f for f in glob.glob(os.path.join(ann.downloads, "*")) if not f.endswith(".crdownload")]
        return bool(done), done
    ok, secs, paths = await until(downloaded, 10)
    if not ok:
        return "ann's download of %s did not arrive in 10 s" % file
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name:format=duration", "-of", "json", paths[0]],
                           capture_output=True, text=True, timeout=20)
    try:
        info = json.loads(probe.stdout)
    except ValueError:
        info = {}
    codecs = sorted(s["codec_name"] for s in info.get("streams", []))
    duration = float(info.get("format", {}).get("duration", 0) or 0)
    res.update(file=os.path.basename(paths[0]), bytes=os.path.getsize(paths[0]), codecs=codecs, duration=duration)
    if codecs != ["opus", "vp8"] or duration < 2:
        return "the downloaded recording: codecs %s, %.1f s (ffprobe: %s)" % (codecs, duration, probe.stderr.strip()[:200])
    return None


async def errors_check(args, tmp, out):
    """A host of our own with auth and a room of at most 2: what the page says when refused."""
    res = out["errors"] = {}
    folder = os.path.join(tmp, "auth-host")
    os.makedirs(folder)
    secret = "meeting-check-secret"
    config = {"http": {"listen": "127.0.0.1:0"}, "media": {"listen": "127.0.0.1:%d" % args.media_port, "announce": ["127.0.0.1"]},
              "auth": {"secret": secret}, "limits": {"maxParticipantsPerRoom": 2},
              "video": {"width": 320, "height": 180, "lowWidth": 160, "lowHeight": 90, "smallWidth": 160, "smallHeight": 90}}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    log = open(os.path.join(folder, "host.log"), "w+")
    host = subprocess.Popen([args.tessera, "serve", "--config", os.path.join(folder, "config.json")], cwd=folder,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    pages = []
    try:
        url = None
        for _ in range(100):
            log.seek(0)
            line = next((l for l in log.read().splitlines() if "listening on http://" in l), None)
            if line:
                url = line.split("listening on ")[1].strip()
                break
            await asyncio.sleep(0.1)
        if not url:
            return "the host with auth did not start"

        def token(identity, admin=False):
            cmd = [args.tessera, "token", "--config", os.path.join(folder, "config.json"), "--room", "full", "--identity", identity] \
                + (["--admin"] if admin else [])
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()

        async def open_page(name, query, host=None):
            page = Page(name, "%s/?%s" % (host or url, urllib.parse.urlencode(query)), tmp,
                        extra=["--host-resolver-rules=MAP meeting.test 127.0.0.1"])
            pages.append(page)
            await page.attach()
            return page

        async def settled(page, want):
            d = await page.check()
            return want(d), {k: d[k] for k in ("connection", "message", "admin")}

        # A bad token.
        bad = await open_page("badtoken", {"room": "full", "identity": "eve", "token": "not-a-token", "autojoin": 1})
        ok, _, data = await until(lambda: settled(bad, lambda d: "refused the token" in d["message"]), 10)
        res["badToken"] = data["message"]
        if not ok:
            return "a bad token: the page said %r" % data["message"]
        # A member's token: in, without admin controls.
        member = await open_page("member", {"room": "full", "identity": "mia", "token": token("mia"), "autojoin": 1})
        ok, _, data = await until(lambda: settled(member, lambda d: d["connection"] == "connected"), 15)
        res["member"] = data
        if not ok or data["admin"]:
            return "a member's token: %s (want connected, no admin controls)" % data
        # An admin's: the controls; then the room is full for a third.
        admin = await open_page("admin", {"room": "full", "identity": "ada", "token": token("ada", admin=True), "autojoin": 1})
        ok, _, data = await until(lambda: settled(admin, lambda d: d["connection"] == "connected" and d["admin"]), 15)
        res["admin"] = data
        if not ok:
            return "an admin's token: %s (want connected, admin controls)" % data
        third = await open_page("third", {"room": "full", "identity": "tom", "token": token("tom"), "autojoin": 1})
        ok, _, data = await until(lambda: settled(third, lambda d: "room is full" in d["message"]), 10)
        res["full"] = data["message"]
        if not ok:
            return "a third guest in a room of 2: the page said %r" % data["message"]
        # Over http:// by a name that is not localhost: no camera or microphone there.
        insecure = await open_page("insecure", {"room": "full"}, host=url.replace("127.0.0.1", "meeting.test"))
        ok, _, data = await until(lambda: settled(insecure, lambda d: "https://" in d["message"]), 5)
        res["insecure"] = data["message"]
        if not ok:
            return "the page over http://meeting.test said %r" % data["message"]
        return None
    finally:
        for page in pages:
            await page.close()
        host.terminate()
        try:
            host.wait(10)
        except subprocess.TimeoutExpired:
            host.kill()
        log.close()


async def screenshots(page, folder):
    """The page at desktop and at phone width, as PNGs for the README."""
    os.makedirs(folder, exist_ok=True)
    for name, width, height, mobile in (("page-desktop.png", 1280, 860, False), ("page-phone.png", 390, 844, True)):
        await page.input("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
        await asyncio.sleep(1.0)
        shot = await asyncio.to_thread(page.dev.call, "Page.captureScreenshot", {"format": "png"}, page.dev.session)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    await page.input("Emulation.clearDeviceMetricsOverride", {})


async def run(args, out, c, tmp):
    alice = R.Peer(*R.PEOPLE[0])
    query = lambda name: urllib.parse.urlencode({"room": args.room, "identity": name})
    ann = Page("ann", "%s/?%s" % (args.url, query("ann")), tmp)
    ben = Page("ben", "%s/?%s" % (args.url, query("ben")), tmp)
    try:
        await scenario(args, ann, ben, alice, out, c)
        if args.screenshots and all(v is None for v in c.values()):
            await ben.click("#people li[data-identity='alice'] button[data-action='pin']")
            await asyncio.sleep(2)
            await screenshots(ben, args.screenshots)
        c["errors"] = await errors_check(args, tmp, out)
    finally:
        for page in (ann, ben):
            await page.close()
        if alice.location:
            try:
                await asyncio.wait_for(R.ahttp("DELETE", alice.location, timeout=2), 3)
            except Exception:
                pass
        for t in alice.tasks:
            t.cancel()
        if alice.pc:
            try:
                await asyncio.wait_for(alice.pc.close(), 3)
            except Exception:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="the host, http://127.0.0.1:PORT")
    ap.add_argument("--tessera", required=True, help="the tessera binary (for a second host with auth, and tokens)")
    ap.add_argument("--room", default="meeting")
    ap.add_argument("--media-port", type=int, default=50002, help="the second host's media port")
    ap.add_argument("--screenshots", help="save the page at desktop and phone width in this folder")
    ap.add_argument("--timeout", type=float, default=180, help="hard bound of the whole run")
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    args.tessera = os.path.abspath(args.tessera)
    out, c = {"peer": "meeting", "room": args.room}, {}
    tmp = tempfile.mkdtemp(prefix="tessera-meeting-")
    t0 = now()
    try:
        asyncio.run(asyncio.wait_for(run(args, out, c, tmp), args.timeout))
    except asyncio.TimeoutError:
        c["timeout"] = "run exceeded its hard bound of %.0f s" % args.timeout
    except Exception as e:
        c["error"] = "%s: %s" % (type(e).__name__, e)
    out["seconds"] = round(now() - t0, 1)
    want = ("join", "speaking", "micMute", "dontHear", "pin", "share", "camera", "template", "recording", "errors")
    failed = {k: v for k, v in c.items() if v is not None}
    if not failed and not all(k in c for k in want):
        failed["incomplete"] = "not every check ran: %s" % sorted(c)
    out["checks"] = {k: "ok" if v is None else "FAIL" for k, v in c.items()}
    out["ok"] = not failed
    print(json.dumps(out), flush=True)
    for k, v in failed.items():
        print("meeting_chromium: FAIL %s: %s" % (k, v), file=sys.stderr)
    print("meeting_chromium: PASS" if not failed else "meeting_chromium: %d checks failed" % len(failed), file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
