#!/usr/bin/env python3
"""Median join timings through /v1/echo: runs Interop/run.sh RUNS times (each run starts its own
host in a loopback-only namespace) and reports, per peer, the median time from the POST to DTLS
connected and to the first echoed video frame.

    Interop/measure_echo.py [--runs 10] [--peers "aiortc chromium"] [--tessera PATH]

PATH defaults to the newer of .build/release/tessera and .build/debug/tessera.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST_FRAME = {"aiortc": "msPostToFirstVideoFrame", "chromium": "msPostToFirstFrameDecoded",
               "gstreamer": "msPostToFirstVideoFrame"}


def default_tessera() -> Path:
    """The release build when it is newer than the debug one or the debug one is missing."""
    release, debug = HERE.parent / ".build/release/tessera", HERE.parent / ".build/debug/tessera"
    if release.exists() and (not debug.exists() or release.stat().st_mtime > debug.stat().st_mtime):
        return release
    return debug


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--peers", default="aiortc chromium")
    parser.add_argument("--tessera", default=str(default_tessera()))
    parser.add_argument("--seconds", type=int, default=4)
    args = parser.parse_args()
    samples: dict[str, dict[str, list[float]]] = {}
    for run in range(max(1, min(args.runs, 50))):
        result = subprocess.run([str(HERE / "run.sh"), "--tessera", args.tessera, "--peers", args.peers,
                                 "--seconds", str(args.seconds)], capture_output=True, text=True, timeout=600)
        reports = [line for line in result.stdout.splitlines() if line.startswith("{")]
        if len(reports) < len(args.peers.split()):
            print(f"run {run + 1}: {len(reports)} reports, exit {result.returncode}; last output:\n"
                  + "\n".join((result.stdout + result.stderr).splitlines()[-15:]), file=sys.stderr)
        for line in result.stdout.splitlines():
            if not line.startswith("{"):
                continue
            report = json.loads(line)
            peer = report.get("peer")
            if not report.get("ok") or peer not in FIRST_FRAME:
                print(f"run {run + 1}: {peer} failed", file=sys.stderr)
                continue
            per_peer = samples.setdefault(peer, {"dtls": [], "frame": []})
            per_peer["dtls"].append(report["msPostToDtlsConnected"])
            per_peer["frame"].append(report[FIRST_FRAME[peer]])
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    print(f"{'peer':<10} {'runs':>4} {'POST→DTLS connected (median)':>30} {'POST→first echoed frame (median)':>34}")
    for peer, values in sorted(samples.items()):
        print(f"{peer:<10} {len(values['dtls']):>4} {statistics.median(values['dtls']):>27.1f} ms "
              f"{statistics.median(values['frame']):>31.1f} ms")
    return 0 if samples else 1


if __name__ == "__main__":
    sys.exit(main())
