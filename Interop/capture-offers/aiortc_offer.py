#!/usr/bin/env python3
"""Capture aiortc's offer for one Opus audio + one VP8 video track (sendrecv).

Run with the venv python (/work/main/.venv/bin/python), inside `unshare -n`.
aioice skips loopback when gathering, so host addresses are patched to 127.0.0.1;
iceServers=[] stops aiortc from adding a public STUN server.
usage: aiortc_offer.py OUT_FILE
"""
import asyncio, fractions, sys, time

import aioice.ice
aioice.ice.get_host_addresses = lambda *a, **k: ["127.0.0.1"]

import numpy as np
from av import AudioFrame, VideoFrame
from aiortc import RTCConfiguration, RTCPeerConnection, MediaStreamTrack


class ToneTrack(MediaStreamTrack):
    """20 ms frames of a 440 Hz tone, s16 mono 48 kHz."""
    kind = "audio"

    def __init__(self):
        super().__init__()
        self._pts = 0

    async def recv(self):
        samples = 960
        t = (np.arange(samples) + self._pts) / 48000
        data = (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16).reshape(1, -1)
        frame = AudioFrame.from_ndarray(data, format="s16", layout="mono")
        frame.sample_rate = 48000
        frame.pts = self._pts
        frame.time_base = fractions.Fraction(1, 48000)
        self._pts += samples
        await asyncio.sleep(0.02)
        return frame


class ColorTrack(MediaStreamTrack):
    """640x480 frames at 30 fps, changing color."""
    kind = "video"

    def __init__(self):
        super().__init__()
        self._n = 0

    async def recv(self):
        img = np.full((480, 640, 3), (self._n * 4) % 256, dtype=np.uint8)
        frame = VideoFrame.from_ndarray(img, format="bgr24")
        frame.pts = self._n * 3000
        frame.time_base = fractions.Fraction(1, 90000)
        self._n += 1
        await asyncio.sleep(1 / 30)
        return frame


async def main(out):
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTrack(ToneTrack())
    pc.addTrack(ColorTrack())
    await pc.setLocalDescription(await pc.createOffer())  # gathers here
    sdp = pc.localDescription.sdp
    with open(out, "wb") as f:
        f.write(sdp.encode())
    print("aiortc: wrote %s (%d bytes, iceGatheringState=%s)" % (out, len(sdp), pc.iceGatheringState))
    await pc.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
