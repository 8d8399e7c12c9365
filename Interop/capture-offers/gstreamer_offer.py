#!/usr/bin/python3
"""Capture GStreamer webrtcbin's offer for one Opus audio + one VP8 video track (sendrecv).

Run with the system python (/usr/bin/python3, for gi), inside `unshare -n`.
libnice never gathers on loopback by itself, so 127.0.0.1 is added to webrtcbin's
NiceAgent. The promise reply holding the offer is kept alive while the offer is used.
usage: gstreamer_offer.py OUT_FILE [GATHER_TIMEOUT_S]
"""
import sys

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("Nice", "0.1")
from gi.repository import GLib, Gst, GstWebRTC, GstSdp, Nice  # noqa: F401

PIPELINE = (
    "webrtcbin name=webrtc bundle-policy=max-bundle "
    "audiotestsrc is-live=true wave=sine ! audioconvert ! audioresample ! opusenc ! rtpopuspay ! "
    "application/x-rtp,media=audio,encoding-name=OPUS,payload=96 ! webrtc. "
    "videotestsrc is-live=true pattern=ball ! video/x-raw,width=640,height=480,framerate=30/1 ! "
    "videoconvert ! vp8enc deadline=1 ! rtpvp8pay ! "
    "application/x-rtp,media=video,encoding-name=VP8,payload=97 ! webrtc. "
)


def main(out, gather_timeout):
    Gst.init(None)
    pipe = Gst.parse_launch(PIPELINE)
    webrtc = pipe.get_by_name("webrtc")
    # Keep this Python reference alive for the whole run: dropping it unrefs
    # webrtcbin's ICE object (floating ref) and webrtcbin then crashes.
    ice = webrtc.get_property("ice-agent")
    agent = ice.get_property("agent")
    addr = Nice.Address()
    addr.set_from_string("127.0.0.1")
    agent.add_local_address(addr)

    loop = GLib.MainLoop()
    state = {"reply": None, "done": False}

    def finish(reason):
        if state["done"]:
            return False
        state["done"] = True
        desc = webrtc.get_property("local-description")
        text = desc.sdp.as_text()
        with open(out, "wb") as f:
            f.write(text.encode())
        print("gstreamer: wrote %s (%d bytes, %s, ice-gathering-state=%s)" % (
            out, len(text), reason, webrtc.get_property("ice-gathering-state").value_nick))
        loop.quit()
        return False

    def on_gathering(*_):
        if webrtc.get_property("ice-gathering-state") == GstWebRTC.WebRTCICEGatheringState.COMPLETE:
            # let webrtcbin finish adding the last candidates to the description
            GLib.timeout_add(200, finish, "gathering complete")

    def on_offer(promise, _):
        promise.wait()
        reply = promise.get_reply()
        state["reply"] = reply  # keep alive while the offer is in use
        offer = reply.get_value("offer")
        webrtc.emit("set-local-description", offer, Gst.Promise.new())
        GLib.timeout_add_seconds(gather_timeout, finish, "gathering timeout")

    def on_negotiation_needed(element):
        element.emit("create-offer", None, Gst.Promise.new_with_change_func(on_offer, None))

    webrtc.connect("on-negotiation-needed", on_negotiation_needed)
    webrtc.connect("notify::ice-gathering-state", on_gathering)
    pipe.set_state(Gst.State.PLAYING)
    GLib.timeout_add_seconds(gather_timeout + 20, lambda: (print("gstreamer: no offer", file=sys.stderr), loop.quit()))
    loop.run()
    pipe.set_state(Gst.State.NULL)
    del ice
    return 0 if state["done"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10))
