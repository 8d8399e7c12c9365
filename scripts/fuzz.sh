#!/usr/bin/env bash
# Builds every libFuzzer target in Fuzz/ (swiftc -sanitize=fuzzer,address) and runs each for a
# bounded time. Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 30 s, all)
# TARGETs are the files Fuzz/NAMEFuzz.swift, named NAME or NAMEFuzz (JSON, Opus, RTCP,
# RTPHeader, SDP, STUN, VP8). The run log is .build/fuzz/TARGET.log.
# A crash leaves its input in Fuzz/artifacts/TARGET/ and fails the script.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_build
cd "$TESSERA_ROOT"

known=()
for file in Fuzz/*Fuzz.swift; do known+=("$(basename "$file" .swift)"); done
seconds=${1:-30}
shift || true
case $seconds in ''|*[!0-9]*) echo "fuzz: SECONDS must be a whole number, not $seconds" >&2
    echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]; targets: ${known[*]}" >&2; exit 2 ;; esac
# A target may be named with or without its Fuzz suffix (STUN or STUNFuzz); unknown ones are
# refused before anything is built or made.
targets=()
for name in "$@"; do
    [ -f "Fuzz/$name.swift" ] && [[ $name == *Fuzz ]] && { targets+=("$name"); continue; }
    [ -f "Fuzz/${name}Fuzz.swift" ] && { targets+=("${name}Fuzz"); continue; }
    echo "fuzz: no target $name; targets: ${known[*]}" >&2
    exit 2
done
[ ${#targets[@]} -gt 0 ] || targets=("${known[@]}")

# The fuzz target is compiled into one module with the sources of the parser it drives.
sources_for() {
    case "$1" in
        STUN*) echo Sources/Wire/*.swift Sources/Transport/STUN*.swift ;;
        SDP*) echo Sources/SDP/*.swift ;;
        JSON*) echo Sources/Wire/*.swift ;;
        *) echo Sources/Wire/*.swift Sources/RTP/*.swift ;;
    esac
}
flags_for() {
    case "$1" in
        STUN*) echo -I Sources/COpenSSL -I Sources/CZlib -lssl -lcrypto -lz ;;
    esac
}
# Valid inputs to start from, where the repository has them.
seeds_for() {
    case "$1" in
        SDP*) echo Tests/SDPTests/Fixtures ;;
        JSON*) echo Config ;;
    esac
}

mkdir -p .build/fuzz
status=0
for target in "${targets[@]}"; do
    binary=.build/fuzz/$target corpus=Fuzz/corpus/$target artifacts=Fuzz/artifacts/$target log=.build/fuzz/$target.log
    rm -f "$binary"
    echo "== $target: build"
    # shellcheck disable=SC2046
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzTarget \
        $(flags_for "$target") $(sources_for "$target") "Fuzz/$target.swift" -o "$binary" 2>&1 \
        | grep -v "Cannot export local symbol '__asan" || true
    [ -x "$binary" ] || { echo "$target: build failed"; status=1; continue; }
    mkdir -p "$corpus" "$artifacts"
    echo "== $target: run ${seconds}s"
    # shellcheck disable=SC2046
    if ! "$binary" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$corpus" $(seeds_for "$target") 2>"$log"; then
        tail -30 "$log"
        echo "$target: FAILED (inputs in $artifacts/)"
        status=1
    else
        grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" | sed "s/^/$target: /"
    fi
    rmdir "$artifacts" 2>/dev/null || true  # kept only when it holds a crash's input
done
rmdir Fuzz/artifacts 2>/dev/null || true
exit $status
