#!/usr/bin/env python3
"""The noisy room, side by side: N aiortc guests join one audio room, every one sending its own
tone all the time, and the host's CPU is read from /proc while they talk. The same clients join
Tessera (POST an offer to /v1/rooms/ROOM/participants) or Janus's AudioBridge (its HTTP API:
create a session, attach janus.plugin.audiobridge, `join` with the offer), so the figures compare
the hosts, not the peers.

Each guest sends a sine of its own (from 300 Hz up in steps of 6 %, leaving out any within 12 Hz
of the 2nd, 3rd or 4th harmonic of one taken, so that no codec's distortion of one guest's tone
lands on another's), at 0.6/N of full scale for N speakers so that a mix of all the others does
not clip, and decodes what it receives. A run counts only when every guest hears: at least one
other guest's tone in what it receives, and its own tone at least 20 dB under the strongest other
one (both hosts send each guest everyone but itself).

Prints one JSON line: the host's CPU per guest in percent of a core over the window, what each
guest heard, and the join times. Exit 1 when a guest could not join or did not hear.

With --speakers K only the first K guests send a tone; the others send silence (Opus frames of
zeros, as aiortc sends a muted track), listen, and must hear a speaker.

usage: noisy_room.py --host tessera|janus --url URL --pid PID [--guests 12] [--speakers N] [--warmup 8] [--seconds 20]
       [--quality 5]   (Janus's per-guest Opus complexity: its `quality`, 4 by default there; Tessera's mixes use 5)
Run with the venv python inside a private network namespace (scripts/bench-janus.sh does).
"""
import argparse, asyncio, itertools, json, math, os, sys, time, urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Interop"))
import echo_aiortc as E   # noqa: E402  (its aioice patch: host candidates on 127.0.0.1)

import numpy as np   # noqa: E402
from aiortc import RTCPeerConnection, RTCSessionDescription   # noqa: E402
from aiortc.mediastreams import MediaStreamError   # noqa: E402

ABSENT_DB = 20.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
transactions = itertools.count(1)


def tones(count):
    chosen, hz = [], 300.0
    while len(chosen) < count:
        if all(abs(hz - k * taken) > 12 and abs(taken - k * hz) > 12 for taken in chosen for k in (2, 3, 4)):
            chosen.append(hz)
        hz *= 1.06
    return chosen


def cpu_seconds(pid):
    """User + system time of the whole process (every thread), from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def post_json(url, body, timeout=10):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


class Janus:
    """Janus's HTTP API (janus.transport.http): one session and AudioBridge handle per guest."""

    def __init__(self, url, room, quality):
        self.url, self.room, self.quality = url.rstrip("/"), room, quality

    def message(self, path, body):
        body = dict(body, transaction="t%d" % next(transactions))
        reply = post_json(self.url + path, body)
        if reply.get("janus") == "error":
            raise RuntimeError("janus: %s" % reply.get("error"))
        return reply

    def join(self, offer_sdp, display):
        session = self.message("", {"janus": "create"})["data"]["id"]
        handle = self.message("/%d" % session, {"janus": "attach", "plugin": "janus.plugin.audiobridge"})["data"]["id"]
        self.message("/%d/%d" % (session, handle), {
            "janus": "message", "jsep": {"type": "offer", "sdp": offer_sdp},
            "body": {"request": "join", "room": int(self.room), "display": display, "quality": self.quality}})
        # The offer holds every candidate: say so, or Janus waits for trickled ones.
        self.message("/%d/%d" % (session, handle), {"janus": "trickle", "candidate": {"completed": True}})
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:   # the answer comes as an event on the session's long poll
            with urllib.request.urlopen("%s/%d?maxev=5" % (self.url, session), timeout=35) as response:
                events = json.loads(response.read())
            for event in events if isinstance(events, list) else [events]:
                plugin = event.get("plugindata", {}).get("data", {})
                if "error" in plugin:
                    raise RuntimeError("audiobridge: %s" % plugin["error"])
                if "jsep" in event:
                    return session, event["jsep"]["sdp"]
        raise RuntimeError("janus sent no answer in 15 s")

    def keepalive(self, session):
        self.message("/%d" % session, {"janus": "keepalive"})


class Guest:
    def __init__(self, index, hz, speakers):
        self.index, self.hz = index, hz
        self.amplitude = 0.6 / speakers if index < speakers else 0.0
        self.pc = RTCPeerConnection()
        self.audio, self.rate = [], E.SAMPLE_RATE
        self.session = None
        self.joined_ms = None

    async def join(self, args, janus):
        self.pc.addTrack(E.ToneTrack(self.hz, self.amplitude))
        self.pc.on("track", lambda track: asyncio.ensure_future(self.consume(track)))
        began = time.monotonic()
        await self.pc.setLocalDescription(await self.pc.createOffer())
        offer = self.pc.localDescription.sdp
        loop = asyncio.get_running_loop()
        if janus:
            self.session, answer = await loop.run_in_executor(None, janus.join, offer, "g%d" % self.index)
        else:
            url = "%s/v1/rooms/%s/participants?identity=g%d" % (args.url.rstrip("/"), args.room, self.index)
            status, _, _, answer = await loop.run_in_executor(None, E.post_offer, url, offer, 10)
            if status != 201:
                raise RuntimeError("POST %s: %s %s" % (url, status, answer[:200]))
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
        self.joined_ms = round((time.monotonic() - began) * 1000)

    async def consume(self, track):
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            self.rate = frame.sample_rate
            data = frame.to_ndarray()
            mono = data[0] if frame.format.is_planar else data.reshape(-1)[::len(frame.layout.channels)]
            self.audio.append((time.monotonic(), mono.astype(np.float64) / 32768.0))

    def heard(self, since, guests):
        """Which guests' tones stand in what arrived after `since`, and how far under them its own lies."""
        chunks = [chunk for at, chunk in self.audio if at >= since]
        if not chunks:
            return {"heard": [], "ownBelowDb": None}
        x = np.concatenate(chunks)
        spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
        freqs = np.fft.rfftfreq(len(x), 1.0 / self.rate)

        def power(hz):
            return float(spectrum[(freqs > hz - 5) & (freqs < hz + 5)].sum()) + 1e-30
        others = {g.index: power(g.hz) for g in guests if g is not self and g.amplitude > 0}
        strongest = max(others.values())
        heard = sorted(i for i, p in others.items() if p > strongest / 100)   # within 20 dB of the strongest
        return {"heard": heard, "ownBelowDb": round(10 * math.log10(strongest / power(self.hz)), 1)}


async def run(args):
    janus = Janus(args.url, args.room, args.quality) if args.host == "janus" else None
    speakers = min(args.speakers or args.guests, args.guests)
    guests = [Guest(i, hz, speakers) for i, hz in enumerate(tones(args.guests))]
    for guest in guests:   # one after the other, as people join
        await guest.join(args, janus)
    await asyncio.sleep(args.warmup)
    if janus:
        for guest in guests:
            janus.keepalive(guest.session)
    began, cpu_began, own_began = time.monotonic(), cpu_seconds(args.pid), cpu_seconds(os.getpid())
    await asyncio.sleep(args.seconds)
    window, cpu = time.monotonic() - began, cpu_seconds(args.pid) - cpu_began
    own = cpu_seconds(os.getpid()) - own_began
    hearing = [guest.heard(began, guests) for guest in guests]
    for guest in guests:
        await guest.pc.close()
    hear_ok = sum(1 for h in hearing if h["heard"] and h["ownBelowDb"] is not None and h["ownBelowDb"] >= ABSENT_DB)
    result = {"host": args.host, "guests": args.guests, "speakers": speakers, "window_s": round(window, 1),
              "host_cpu_per_guest_pct": round(100 * cpu / window / args.guests, 3),
              "host_cores": round(cpu / window, 3), "guests_cores": round(own / window, 3), "hearing_ok": hear_ok,
              "voices_heard_median": float(np.median([len(h["heard"]) for h in hearing])),
              "own_below_db_min": min((h["ownBelowDb"] for h in hearing if h["ownBelowDb"] is not None), default=None),
              "join_ms_max": max(guest.joined_ms or 0 for guest in guests)}
    print(json.dumps(result), flush=True)
    return hear_ok == args.guests


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", choices=["tessera", "janus"], required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--room", default="1234")
    parser.add_argument("--guests", type=int, default=12)
    parser.add_argument("--speakers", type=int, default=0, help="how many send a tone (0: all)")
    parser.add_argument("--warmup", type=float, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--quality", type=int, default=5)
    parser.add_argument("--address", default="127.0.0.1", help="the guests' host candidate (Janus gathers on no loopback interface)")
    args = parser.parse_args()
    if args.speakers == 1:
        parser.error("--speakers takes 0 (all) or 2 and more: a lone speaker hears nobody")
    E.aioice.ice.get_host_addresses = lambda *a, **k: [args.address]
    try:
        ok = asyncio.run(asyncio.wait_for(run(args), args.warmup + args.seconds + 20 + 5 * args.guests))
    except (RuntimeError, OSError, asyncio.TimeoutError) as error:
        print("noisy_room: FAIL %s" % error, file=sys.stderr)
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
