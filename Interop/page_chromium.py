#!/usr/bin/env python3
"""Interop: the host's own web page (GET /) joins a room from headless Chromium.

Chromium opens http://HOST/?room=R&identity=I&autojoin=1 with fake camera and microphone; the page
gets them, POSTs its offer to /v1/rooms/R/participants and connects. The check is made from the
host's side, through its API: the participant appears in GET /v1/rooms/R, reaches the "secure"
state (ICE-lite + DTLS done) and the host receives its media (packets counted). Stdlib only.

usage: page_chromium.py --url http://127.0.0.1:PORT [--seconds 20]
"""
import argparse, json, os, shutil, signal, subprocess, sys, tempfile, time, urllib.request

FLAGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
         "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
         "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required",
         "--disable-features=WebRtcHideLocalIpsWithMdns", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    room, identity = "page-test", "chromium-page"
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="tessera-page-")
    page = f"{args.url}/?room={room}&identity={identity}&name=Headless&autojoin=1"
    browser = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", page],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    started = time.monotonic()
    result = {"peer": "page", "ok": False}
    try:
        deadline = started + args.seconds
        while time.monotonic() < deadline:
            time.sleep(0.25)
            try:
                with urllib.request.urlopen(f"{args.url}/v1/rooms/{room}", timeout=2) as response:
                    participants = json.load(response)["participants"]
            except Exception:
                continue
            me = next((p for p in participants if p["identity"] == identity), None)
            if me:
                result.update(state=me["state"], packetsReceived=me["packetsReceived"], name=me["name"])
                if me["state"] == "secure" and me["packetsReceived"] >= 50:
                    result.update(ok=True, msToSecureWithMedia=round((time.monotonic() - started) * 1000))
                    break
    finally:
        os.killpg(browser.pid, signal.SIGTERM)
        try:
            browser.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(result))
    if not result["ok"]:
        print(f"page_chromium: FAIL join: the page's participant got to {result.get('state', 'nowhere')} "
              f"with {result.get('packetsReceived', 0)} packets received in {args.seconds} s", file=sys.stderr)
        return 1
    print("page_chromium: PASS", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
