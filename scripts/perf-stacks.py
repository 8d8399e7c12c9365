#!/usr/bin/env python3
"""Reads `perf script` output (call graphs) and prints where the time went, Swift names demangled.

    perf-stacks.py STACKS self [N]            the N functions with the most samples of their own
    perf-stacks.py STACKS inclusive [N]       the N functions with the most samples under them
    perf-stacks.py STACKS callers REGEX       who calls the first frame matching REGEX
    perf-stacks.py STACKS callees REGEX       what the first frame matching REGEX spends in

Percentages are of all samples. Frames in libraries built without frame pointers (libc,
libcrypto, libsrtp2) often have no caller: they show as [unknown].
"""
import collections
import re
import signal
import subprocess
import sys


def read_samples(path):
    samples, frames = [], []
    with open(path, errors="replace") as lines:
        for line in lines:
            if not line.strip():
                if frames:
                    samples.append(frames)
                frames = []
            elif line[0] in " \t":
                parts = line.strip().split(None, 1)
                if len(parts) == 2:
                    frames.append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1].rsplit(" (", 1)[0]))
    if frames:
        samples.append(frames)
    return samples


def demangler(names):
    try:
        out = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names),
                             capture_output=True, text=True, check=True).stdout.split("\n")
        table = {name: readable[:160] for name, readable in zip(names, out)}
    except (OSError, subprocess.CalledProcessError):
        table = {}
    return lambda name: table.get(name, name)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    if len(sys.argv) < 3 or sys.argv[2] not in ("self", "inclusive", "callers", "callees"):
        sys.exit(__doc__)
    samples = read_samples(sys.argv[1])
    if not samples:
        sys.exit("perf-stacks: no samples in " + sys.argv[1])
    mode, argument = sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
    name = demangler(sorted({frame for frames in samples for frame in frames}))
    counts = collections.Counter()
    if mode == "self":
        counts.update(name(frames[0]) for frames in samples)
    elif mode == "inclusive":
        for frames in samples:
            counts.update({name(frame) for frame in frames})
    else:
        pattern = re.compile(argument or ".")
        for frames in samples:
            for depth, frame in enumerate(frames):
                if pattern.search(frame) or pattern.search(name(frame)):
                    if mode == "callers":
                        counts[name(frames[depth + 1]) if depth + 1 < len(frames) else "-"] += 1
                    else:
                        counts[name(frames[depth - 1]) if depth > 0 else "(self)"] += 1
                    break
    limit = int(argument) if mode in ("self", "inclusive") and argument else 40
    for function, count in counts.most_common(limit):
        print(f"{100 * count / len(samples):6.2f}% {function}")


if __name__ == "__main__":
    main()
