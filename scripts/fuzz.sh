#!/usr/bin/env bash
# Builds every libFuzzer target in Fuzz/ (swiftc -sanitize=fuzzer,address) and runs each for a
# bounded time. Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 30 s, all)
# A crash leaves its input in Fuzz/artifacts/TARGET/ and fails the script.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_build
cd "$TESSERA_ROOT"

seconds=${1:-30}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for file in Fuzz/*Fuzz.swift; do targets+=("$(basename "$file" .swift)"); done
fi

# The fuzz target is compiled into one module with the sources of the parser it drives.
sources_for() {
    case "$1" in
        STUN*) echo Sources/Wire/*.swift Sources/Transport/STUN*.swift Sources/Transport/TransportAddress.swift ;;
        SDP*) echo Sources/SDP/*.swift ;;
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
    esac
}

mkdir -p .build/fuzz
status=0
for target in "${targets[@]}"; do
    binary=.build/fuzz/$target corpus=Fuzz/corpus/$target artifacts=Fuzz/artifacts/$target
    mkdir -p "$corpus" "$artifacts"
    rm -f "$binary"
    echo "== $target: build"
    # shellcheck disable=SC2046
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzTarget \
        $(flags_for "$target") $(sources_for "$target") "Fuzz/$target.swift" -o "$binary" 2>&1 \
        | grep -v "Cannot export local symbol '__asan" || true
    [ -x "$binary" ] || { echo "$target: build failed"; status=1; continue; }
    echo "== $target: run ${seconds}s"
    # shellcheck disable=SC2046
    if ! "$binary" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$corpus" $(seeds_for "$target") 2>"$artifacts/last.log"; then
        tail -30 "$artifacts/last.log"
        echo "$target: FAILED (inputs in $artifacts/)"
        status=1
    else
        grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$artifacts/last.log" | sed "s/^/$target: /"
    fi
done
exit $status
