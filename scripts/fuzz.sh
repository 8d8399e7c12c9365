#!/usr/bin/env bash
# Builds the libFuzzer targets (address sanitizer on) and runs each, from the corpus kept in the
# repository (Fuzz/seeds/TARGET: minimized, seeded from real captures and the API's examples)
# plus what earlier runs here found (Fuzz/corpus/TARGET, not kept).
# Usage: scripts/fuzz.sh [SECONDS | --runs N] [--merge] [TARGET...]   (default 30 s each, all)
#   SECONDS    run each target for that long;  --runs N: for N executions (10000000 for depth)
#   --merge    afterwards, minimize seeds plus corpus back into Fuzz/seeds/TARGET (commit it)
# Targets: the wire parsers Fuzz/NAMEFuzz.swift (JSON, Opus, RTCP, RTPHeader, SDP, STUN, VP8),
# each compiled by swiftc into one module with its parser's sources; and those of the upper
# layers, Fuzz/Host/NAMEFuzz.swift (Config, Token, Bodies), built as one SwiftPM product with
# every module instrumented. Name them NAME or NAMEFuzz. The run log is .build/fuzz/TARGET.log.
# A crash leaves its input in Fuzz/artifacts/TARGET/ and fails the script.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_build
cd "$TESSERA_ROOT"

known=()
for file in Fuzz/*Fuzz.swift Fuzz/Host/*Fuzz.swift; do known+=("$(basename "$file" .swift)"); done
usage="usage: scripts/fuzz.sh [SECONDS | --runs N] [--merge] [TARGET...]; targets: ${known[*]}"
limit=(-max_total_time=30) merge=0
names=()
while [ $# -gt 0 ]; do
    case $1 in
        --runs) [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "fuzz: --runs needs a count; $usage" >&2; exit 2; }
            limit=(-runs="$2"); shift 2 ;;
        --merge) merge=1; shift ;;
        [0-9]*) [[ $1 =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number, not $1; $usage" >&2; exit 2; }
            limit=(-max_total_time="$1"); shift ;;
        -*) echo "fuzz: unknown option $1; $usage" >&2; exit 2 ;;
        *) names+=("$1"); shift ;;
    esac
done
# A target may be named with or without its Fuzz suffix (STUN or STUNFuzz); unknown ones are
# refused before anything is built or made.
targets=()
for name in "${names[@]}"; do
    name=${name%Fuzz}Fuzz
    if [ -f "Fuzz/$name.swift" ] || [ -f "Fuzz/Host/$name.swift" ]; then targets+=("$name"); continue; fi
    echo "fuzz: no target $name; $usage" >&2
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
# The longest input tried: a datagram's worth for the packet parsers (what arrives at the media
# port fits the path's MTU), 16 KiB for SDP (a browser's offer with a screen share is 10 KB) and
# the JSON documents. Longer inputs are the robustness tests' and the live attack's (3000
# m-lines, 60 KB attributes); here they would only slow each execution.
max_len_for() {
    case "$1" in
        STUN*|RTPHeader*|RTCP*|VP8*|Opus*) echo 1500 ;;
        *) echo 16384 ;;
    esac
}

# The upper layers' targets are one product (TESSERA_FUZZ=1 adds it to Package.swift), built once.
host_binary=.build/fuzz-pm/release/TesseraFuzz
build_host() {
    [ -n "${host_built:-}" ] && return 0
    host_built=1
    rm -f "$host_binary"
    TESSERA_FUZZ=1 swift build -c release --build-path .build/fuzz-pm --product TesseraFuzz \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing 2>&1 | grep -E "error|warning:" || true
}

mkdir -p .build/fuzz
status=0
for target in "${targets[@]}"; do
    corpus=Fuzz/corpus/$target seeds=Fuzz/seeds/$target artifacts=Fuzz/artifacts/$target log=.build/fuzz/$target.log
    run=()
    echo "== $target: build"
    if [ -f "Fuzz/Host/$target.swift" ]; then
        build_host
        binary=$host_binary
        # LeakSanitizer cannot follow the references Swift keeps with tag bits in spare pointer
        # bits (the JSON shapes' indirect enums, built once), so it reports them at exit; memory
        # that grows per input is still caught by -rss_limit_mb.
        run=(env TESSERA_FUZZ_TARGET="$target" ASAN_OPTIONS=detect_leaks=0)
    else
        binary=.build/fuzz/$target
        rm -f "$binary"
        # shellcheck disable=SC2046
        swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzTarget \
            $(flags_for "$target") $(sources_for "$target") "Fuzz/$target.swift" -o "$binary" 2>&1 \
            | grep -v "Cannot export local symbol '__asan" || true
    fi
    [ -x "$binary" ] || { echo "$target: build failed"; status=1; continue; }
    mkdir -p "$corpus" "$seeds" "$artifacts"
    echo "== $target: run ${limit[*]}"
    if ! "${run[@]}" "$binary" "${limit[@]}" -max_len="$(max_len_for "$target")" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$corpus" "$seeds" 2>"$log"; then
        tail -30 "$log"
        echo "$target: FAILED (inputs in $artifacts/)"
        status=1
    else
        grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" | sed "s/^/$target: /"
        if [ $merge = 1 ]; then
            rm -rf "$seeds.merged" && mkdir -p "$seeds.merged"
            "${run[@]}" "$binary" -merge=1 -max_len="$(max_len_for "$target")" "$seeds.merged" "$seeds" "$corpus" 2>>"$log"
            rm -rf "$seeds" && mv "$seeds.merged" "$seeds"
            echo "$target: $(find "$seeds" -type f | wc -l) seeds kept in $seeds"
        fi
    fi
    rmdir "$artifacts" 2>/dev/null || true  # kept only when it holds a crash's input
done
rmdir Fuzz/artifacts 2>/dev/null || true
exit $status
