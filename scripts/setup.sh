#!/usr/bin/env bash
# Installs what Tessera needs on Debian 12, idempotently: a second run installs nothing.
# Sourced by scripts/serve.sh and scripts/test.sh; usable alone: `scripts/setup.sh [build|test]`.
set -euo pipefail

TESSERA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# C libraries the host links (see Package.swift's system-library targets) and what it runs; the C++
# standard library's headers for CWebM (libwebm's parser is C++; Swift's toolchain uses GCC's).
BUILD_PACKAGES=(pkg-config libssl-dev libsrtp2-dev libvpx-dev libopus-dev libyuv-dev libmicrohttpd-dev
    libwebm-dev libogg-dev libpng-dev libturbojpeg0-dev libfreetype-dev zlib1g-dev libhiredis-dev fonts-dejavu-core
    libstdc++-12-dev)
# Tools the tests use: ffprobe/ffmpeg to check recordings, unshare/ip for a loopback-only namespace,
# curl for HTTPS and the docs' examples, redis-server for the cluster's directory (the Redis unit
# tests and Interop/cluster_check.sh start their own, on loopback, with persistence off).
TEST_PACKAGES=(ffmpeg iproute2 util-linux curl redis-server)
# Real peers for Interop/: headless Chromium, GStreamer's webrtcbin with the system Python's gi.
INTEROP_PACKAGES=(python3 python3-venv chromium gstreamer1.0-tools gstreamer1.0-plugins-base
    gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-nice python3-gi gir1.2-gstreamer-1.0
    gir1.2-gst-plugins-base-1.0 gir1.2-gst-plugins-bad-1.0 gir1.2-nice-0.1)

log() { printf 'setup: %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        log "need root to run: $*"; return 1
    fi
}

# Installs the Debian packages that are not installed yet; runs apt-get update only then.
ensure_debian_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# A venv inside the repo (git-ignored) holding Interop/requirements.txt; reinstalls only when
# that file changes.
ensure_python_venv() {
    local requirements="$TESSERA_ROOT/Interop/requirements.txt" venv="$TESSERA_ROOT/.venv"
    [ -f "$requirements" ] || return 0
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    local stamp="$venv/.requirements.sha256" sum
    sum=$(sha256sum "$requirements" | cut -d' ' -f1)
    if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
        log "installing Python packages into .venv"
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
        echo "$sum" >"$stamp"
    fi
}

ensure_swift() {
    command -v swift >/dev/null || { log "swift is not on PATH: install the Swift toolchain first"; exit 1; }
}

setup_build() {
    ensure_swift
    ensure_debian_packages "${BUILD_PACKAGES[@]}"
}

setup_test() {
    setup_build
    ensure_debian_packages "${TEST_PACKAGES[@]}" "${INTEROP_PACKAGES[@]}"
    ensure_python_venv
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case "${1:-test}" in
        build) setup_build ;;
        test) setup_test ;;
        *) echo "usage: scripts/setup.sh [build|test]" >&2; exit 2 ;;
    esac
fi
