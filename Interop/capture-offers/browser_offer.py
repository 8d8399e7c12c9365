#!/usr/bin/env python3
"""Capture a browser's SDP offer.

Serves offer.html on 127.0.0.1, starts the browser (headless) on it and waits
for the page to POST its offer; writes the body byte for byte to --out.
Meant to run inside `unshare -n` (loopback only). Stdlib only.

usage: browser_offer.py {chromium,firefox} --out FILE [--mode camera|screenshare]
"""
import argparse, http.server, os, shutil, signal, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))

CHROMIUM_FLAGS = [
    "--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
    "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
    "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required",
    "--disable-features=WebRtcHideLocalIpsWithMdns", "--no-first-run",
    "--no-default-browser-check", "--disable-background-networking",
]

FIREFOX_PREFS = {
    "media.navigator.streams.fake": True,
    "media.navigator.permission.disabled": True,
    "media.peerconnection.ice.loopback": True,
    "media.peerconnection.ice.obfuscate_host_addresses": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
}


class State:
    result = None      # (name, body bytes, headers)
    error = None
    done = threading.Event()


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=HERE, **k)

    def log_message(self, fmt, *args):
        pass  # quiet

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.startswith("/offer/"):
            State.result = (self.path[len("/offer/"):], body, dict(self.headers))
        else:
            State.error = body.decode("utf-8", "replace")
        self.send_response(204)
        self.end_headers()
        State.done.set()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("browser", choices=["chromium", "firefox"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", default="camera")
    ap.add_argument("--gather-ms", type=int, default=10000)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/offer.html?name=%s&mode=%s&gather_ms=%d" % (
        srv.server_address[1], os.path.basename(args.out), args.mode, args.gather_ms)

    tmp = tempfile.mkdtemp(prefix="offer-%s-" % args.browser)
    env = dict(os.environ, HOME=tmp)
    if args.browser == "chromium":
        cmd = [shutil.which("chromium") or "/usr/bin/chromium", *CHROMIUM_FLAGS,
               "--user-data-dir=" + os.path.join(tmp, "profile"), url]
    else:
        prof = os.path.join(tmp, "profile")
        os.makedirs(prof)
        with open(os.path.join(prof, "user.js"), "w") as f:
            for k, v in FIREFOX_PREFS.items():
                val = ("true" if v else "false") if isinstance(v, bool) else '"%s"' % v
                f.write('user_pref("%s", %s);\n' % (k, val))
        env["MOZ_HEADLESS"] = "1"
        cmd = [shutil.which("firefox-esr") or "/usr/bin/firefox-esr", "--headless",
               "--profile", prof, "--no-remote", url]

    log = open(os.path.join(tmp, "browser.log"), "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        State.done.wait(args.timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except Exception:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except Exception:
                pass
        srv.shutdown()
        log.close()

    if State.result is None:
        sys.stderr.write("no offer from %s (page error: %s); browser log:\n" % (args.browser, State.error))
        sys.stderr.write(open(os.path.join(tmp, "browser.log"), errors="replace").read()[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)
        return 1
    _, body, headers = State.result
    with open(args.out, "wb") as f:
        f.write(body)
    shutil.rmtree(tmp, ignore_errors=True)
    print("%s: wrote %s (%d bytes, iceGatheringState=%s)\n  UA: %s" % (
        args.browser, args.out, len(body), headers.get("X-Ice-Gathering-State"), headers.get("X-User-Agent")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
