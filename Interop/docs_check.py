#!/usr/bin/env python3
"""The docs' examples, run: every `curl` line of docs/api.md against a fresh `tessera serve` on
its built-in defaults (http://127.0.0.1:8080, as the examples are written), every template of
docs/api.md put into a room and composed offline, and every config of docs/config.md checked.

    Interop/docs_check.py --tessera .build/debug/tessera [--work DIR]

The host binds the default ports, so run this where they are free: Interop/run.sh (the `docs`
peer) gives it a network namespace of its own. In docs/api.md:
  - each ```sh block runs in order in one bash session (variables carry from block to block);
  - a line `# → STATUS [BODY]` after a curl command is what it must answer: the status always,
    and the body too when one is shown (JSON compared as JSON, where the string "…" stands for
    any value; a body abridged with … between values is not compared);
  - a block after `<!-- docs-check: auth -->` runs against a second host whose
    Config/tessera.json sets auth.secret, with `tessera` on PATH to mint tokens;
  - each ```json block under "## Templates" is PUT as a layout and given to `tessera compose`.
Prints PASS/FAIL lines and `docs: N passed, N failed`; exit status 0 when all passed.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = "http://127.0.0.1:8080"
ARROW = re.compile(r"^# → (\d{3})(?: (.*))?$")

passed = 0
failed = 0


def result(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"docs: PASS {name}")
    else:
        failed += 1
        print(f"docs: FAIL {name}: {detail}")


def fenced_blocks(text):
    """(info, body, marker) for each fenced block; marker is the HTML comment just before it."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("```") and len(line) > 3:
            info = line[3:].strip()
            marker = ""
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j >= 0 and lines[j].strip().startswith("<!--"):
                marker = lines[j].strip()
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            blocks.append((info, "\n".join(body), marker))
        i += 1
    return blocks


def section(text, heading):
    """The text from `heading` to the next heading of the same level."""
    start = text.index(heading)
    rest = text[start + len(heading):]
    end = re.search(r"^## ", rest, re.M)
    return rest[: end.start()] if end else rest


class Host:
    """`tessera serve` with no arguments in `directory`, on the built-in defaults."""

    def __init__(self, tessera, directory):
        self.log_path = os.path.join(directory, "host.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen([tessera, "serve"], cwd=directory, stdout=self.log, stderr=self.log,
                                        stdin=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            if "tessera: listening on" in self.output():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"the host did not start:\n{self.output()[-2000:]}")

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return -9


def run_shell_blocks(blocks, directory, env, label):
    """Runs the blocks as one bash session; checks each curl's status (and body) against its arrow line."""
    calls = os.path.join(directory, "calls")
    os.makedirs(calls, exist_ok=True)
    with open(os.path.join(calls, "n"), "w") as f:
        f.write("0")
    expected = []
    for body in blocks:
        for line in body.split("\n"):
            match = ARROW.match(line.strip())
            if match:
                expected.append((match.group(1), match.group(2), line.strip()))
    # Every curl is counted in a file (it may run in a subshell: $(…), a pipe) and leaves its
    # headers and body there.
    prelude = f"""
D={calls}
curl() {{
  local n=$(( $(cat "$D/n") + 1 )); echo "$n" > "$D/n"
  command curl -D "$D/h.$n" "$@" | tee "$D/b.$n"
}}
"""
    script = prelude + "\n".join(blocks) + "\n"
    with open(os.path.join(directory, f"{label}.sh"), "w") as f:
        f.write(script)
    run = subprocess.run(["bash", f"{label}.sh"], cwd=directory, env=env, capture_output=True, text=True, timeout=120)
    with open(os.path.join(calls, "n")) as f:
        count = int(f.read().strip() or 0)
    result(count == len(expected), f"{label}: one '# →' line per curl",
           f"{count} curl calls ran, {len(expected)} answers are written (stderr: {run.stderr[-400:]})")
    for index in range(min(count, len(expected))):
        status_wanted, body_wanted, line = expected[index]
        try:
            with open(os.path.join(calls, f"h.{index + 1}"), errors="replace") as f:
                statuses = re.findall(r"^HTTP/\S+ (\d{3})", f.read(), re.M)
        except FileNotFoundError:
            statuses = []
        status = statuses[-1] if statuses else "none"
        with open(os.path.join(calls, f"b.{index + 1}"), errors="replace") as f:
            body = f.read().strip()
        ok = status == status_wanted
        detail = f"answered {status}, the docs say {status_wanted} ({line})"
        if ok and body_wanted:
            detail = f"answered {body[:300]!r}, the docs say {body_wanted[:300]!r}"
            if body_wanted.startswith("{"):
                try:
                    wanted = json.loads(body_wanted)
                except ValueError:
                    wanted = None  # an abridged example ("…" between values): the status only
                if wanted is not None:
                    try:
                        ok = matches(json.loads(body), wanted)
                    except ValueError:
                        ok = False
            elif "…" not in body_wanted:
                ok = body == body_wanted
        result(ok, f"{label} call {index + 1}: {line[:70]}", detail)
    return run


def matches(actual, wanted):
    """JSON equality where the string "…" in the docs stands for any value (an id, a time)."""
    if wanted == "…":
        return True
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and actual.keys() == wanted.keys() and all(matches(actual[k], wanted[k]) for k in wanted)
    if isinstance(wanted, list):
        return isinstance(actual, list) and len(actual) == len(wanted) and all(matches(a, w) for a, w in zip(actual, wanted))
    return actual == wanted


def put_layout(template, room="demo"):
    request = urllib.request.Request(f"{BASE}/v1/rooms/{room}/layout", data=template.encode(), method="PUT",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--work")
    args = parser.parse_args()
    tessera = os.path.abspath(args.tessera)
    work = args.work or tempfile.mkdtemp(prefix="tessera-docs-")
    os.makedirs(work, exist_ok=True)
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    if not os.path.exists(os.path.join(bin_dir, "tessera")):
        os.symlink(tessera, os.path.join(bin_dir, "tessera"))
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))

    with open(os.path.join(REPO, "docs/api.md")) as f:
        api = f.read()
    blocks = fenced_blocks(api)
    plain = [body for info, body, marker in blocks if info == "sh" and "docs-check: auth" not in marker]
    authed = [body for info, body, marker in blocks if info == "sh" and "docs-check: auth" in marker]
    templates = [body for info, body, _ in fenced_blocks(section(api, "## Templates")) if info == "json"]
    result(len(plain) >= 10 and len(authed) >= 1 and len(templates) >= 2, "docs/api.md has its examples",
           f"{len(plain)} sh blocks, {len(authed)} with auth, {len(templates)} templates")
    offer = os.path.join(REPO, "Tests/SDPTests/Fixtures/chromium-offer.sdp")

    # 1. The built-in defaults: every example, then every template as a layout.
    plain_dir = os.path.join(work, "plain")
    os.makedirs(plain_dir, exist_ok=True)
    shutil.copy(offer, os.path.join(plain_dir, "offer.sdp"))
    # The same session renegotiated with a receive-only video m-line (the subscription examples).
    shutil.copy(os.path.join(REPO, "Tests/SDPTests/Fixtures/chromium-offer-receiver.sdp"), os.path.join(plain_dir, "offer-receiver.sdp"))
    if templates:
        with open(os.path.join(plain_dir, "side-by-side.json"), "w") as f:
            f.write(templates[0])
    host = Host(tessera, plain_dir)
    try:
        result("config: built-in defaults" in host.output(), "serve with no config says it runs on the built-in defaults",
               host.output()[:300])
        run_shell_blocks(plain, plain_dir, env, "api")
        for index, template in enumerate(templates):
            status, body = put_layout(template)
            result(status == 200, f"template {index + 1} is accepted by PUT …/layout", f"{status} {body[:300]}")
    finally:
        status = host.stop()
        result(status == 0, "the host exits 0 on SIGTERM", f"status {status}")
        if failed:
            print(host.output()[-3000:])

    # 2. With auth.secret in Config/tessera.json: the token examples.
    auth_dir = os.path.join(work, "auth")
    os.makedirs(os.path.join(auth_dir, "Config"), exist_ok=True)
    shutil.copy(offer, os.path.join(auth_dir, "offer.sdp"))
    with open(os.path.join(auth_dir, "Config/tessera.json"), "w") as f:
        json.dump({"auth": {"secret": "docs-check-secret-0123456789"}}, f)
    host = Host(tessera, auth_dir)
    try:
        result("config: Config/tessera.json" in host.output(), "serve reads Config/tessera.json when it is there",
               host.output()[:300])
        run_shell_blocks(authed, auth_dir, env, "tokens")
    finally:
        host.stop()

    # 3. `tessera compose` takes the same layouts: each template, and a preset.
    compose_dir = os.path.join(work, "compose")
    os.makedirs(compose_dir, exist_ok=True)
    for name, colour in (("alice", "red"), ("bob", "blue")):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c={colour}:size=320x240:rate=15",
                        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "1", "-c:v", "libvpx",
                        "-deadline", "realtime", "-c:a", "libopus", "-ac", "1", os.path.join(compose_dir, f"{name}.webm")],
                       check=True, timeout=60)
    for index, layout in enumerate(templates + ['{"preset": "grid"}']):
        path = os.path.join(compose_dir, f"layout-{index}.json")
        with open(path, "w") as f:
            f.write(layout)
        out = os.path.join(compose_dir, f"out-{index}.webm")
        run = subprocess.run([tessera, "compose", "--template", path, "--out", out, "alice.webm", "bob.webm"],
                             cwd=compose_dir, capture_output=True, text=True, timeout=120)
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", out],
                               capture_output=True, text=True) if run.returncode == 0 else None
        result(run.returncode == 0 and probe is not None and "vp8" in probe.stdout,
               f"compose takes layout {index + 1} ({json.loads(layout).get('preset', 'template')})",
               f"exit {run.returncode}: {run.stderr[-300:]}")

    # 4. Every config in docs/config.md is valid, read from the work folder where `tessera cert`
    #    wrote the pair its HTTPS example names.
    cert = subprocess.run([tessera, "cert", "--host", "192.168.1.20", "--out", "tls"], cwd=work, capture_output=True,
                          text=True, timeout=30)
    result(cert.returncode == 0, "tessera cert writes tls/cert.pem and tls/key.pem", cert.stderr.strip()[-300:])
    with open(os.path.join(REPO, "docs/config.md")) as f:
        configs = [body for info, body, _ in fenced_blocks(f.read()) if info == "json"]
    result(len(configs) >= 2, "docs/config.md has example configs", f"{len(configs)} found")
    for index, config in enumerate(configs):
        path = os.path.join(work, f"config-{index}.json")
        with open(path, "w") as f:
            f.write(config)
        run = subprocess.run([tessera, "serve", "--check-config", path], cwd=work, capture_output=True, text=True, timeout=30)
        result(run.returncode == 0, f"docs/config.md config {index + 1} is valid", run.stderr.strip()[-300:])

    print(f"docs: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
