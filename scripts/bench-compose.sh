#!/usr/bin/env bash
# Compose throughput: N inputs of 640x360 VP8 (30 fps, 10 s, each its own colour and tone) into a
# 1280x720 grid at 30 fps, by `tessera compose` and by a GStreamer pipeline doing the same work
# (vp8dec ! compositor ! vp8enc with every encoder setting TrackRecorder gives libvpx: real time,
# cpu-used -6, CBR 2 Mbit/s, quantizers 2-56, under/overshoot 100/15 %, buffer 500/600/1000 ms, key
# frames at most 7.5x a frame's budget and every 3000 frames, static threshold 1, 1 thread, so both
# files come out the same size; and the audio: opusdec ! audiomixer ! opusenc at 64 kbit/s mono, no
# in-band FEC, as the recording's), 3 runs each, medians: frames per second of wall time, and CPU
# time (user + system) per composed frame, which counts GStreamer's extra threads too; and each
# side's start, the CPU time of composing the inputs' first 0.1 s (3 frames), which every run pays
# whatever its length.
#   scripts/bench-compose.sh [N...]     (default: 4 9 16)
# BEFORE=<another tessera binary> (a copy of an earlier commit's release build) runs it too, in
# turn with this build and GStreamer in every run, and adds its CPU a frame and this build's
# share of it: a before/after that the machine's moods fall on alike. RUNS sets the runs (3).
# Each run also gives its own ratio (GStreamer's CPU a frame over Tessera's, the two measured one
# after the other): their median is printed too, steadier than the ratio of the medians on a
# shared machine whose load moves between runs.
# AB_ROUNDS=N with BEFORE: only the two Tessera builds, N rounds, each round both (the order
# swapped every round), and the median of the rounds' ratios: a before/after of a few percent,
# which the machine's moods hide from 3 runs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_test
cd "$TESSERA_ROOT"
swift build -c release --product tessera >/dev/null
TESSERA=.build/release/tessera
WORK=${BENCH_DIR:-/tmp/tessera-bench-compose}
mkdir -p "$WORK"
COLORS=(red green blue yellow magenta cyan white orange purple pink brown gray navy olive teal maroon)
SECONDS_OF_MEDIA=10
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(4 9 16)

# Inputs: made once, kept between runs.
for i in $(seq 0 15); do
    file="$WORK/in$i.webm"
    [ -f "$file" ] && continue
    ffmpeg -v error -f lavfi -i "color=c=${COLORS[$i]}:size=640x360:rate=30,drawbox=x=mod(t*80\,600):y=150:w=40:h=60:color=black:t=fill" \
        -f lavfi -i "sine=frequency=$((300 + 60 * i)):sample_rate=48000" -t "$SECONDS_OF_MEDIA" \
        -c:v libvpx -deadline realtime -cpu-used 8 -b:v 600k -g 60 -c:a libopus -b:a 32k -ac 1 "$file"
done

# The same inputs cut to their first 0.1 s (3 frames), of the same names (the template's
# participants): composing them is what a run costs before and after its frames (the process's
# start, the codecs' buffers, the file's end).
mkdir -p "$WORK/start"
for i in $(seq 0 15); do
    [ -f "$WORK/start/in$i.webm" ] || ffmpeg -v error -i "$WORK/in$i.webm" -t 0.1 -c copy "$WORK/start/in$i.webm"
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# The GStreamer pipeline for N inputs ("$@"), side x side tiles, into $1's output.
gst_pipeline() {
    local output=$1; shift
    local n=$# tile_w=$((1280 / side)) tile_h=$((720 / side)) i=0 pipeline="compositor name=mix background=black"
    for i in $(seq 0 $((n - 1))); do
        pipeline+=" sink_$i::xpos=$(( (i % side) * tile_w )) sink_$i::ypos=$(( (i / side) * tile_h )) sink_$i::width=$tile_w sink_$i::height=$tile_h"
    done
    pipeline+=" ! video/x-raw,width=1280,height=720,framerate=30/1 ! vp8enc deadline=1 cpu-used=-6 end-usage=cbr target-bitrate=2000000 threads=1 error-resilient=default min-quantizer=2 max-quantizer=56 undershoot=100 overshoot=15 buffer-initial-size=500 buffer-optimal-size=600 buffer-size=1000 max-intra-bitrate=750 keyframe-max-dist=3000 static-threshold=1 ! queue ! webmmux name=mux ! filesink location=$output"
    pipeline+=" audiomixer name=amix ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=1 ! opusenc bitrate=64000 ! queue ! mux."
    i=0
    for input in "$@"; do
        pipeline+=" filesrc location=$input ! matroskademux name=demux$i demux$i.video_0 ! queue ! vp8dec ! videoconvert ! mix.sink_$i"
        pipeline+=" demux$i.audio_0 ! queue ! opusdec ! audioconvert ! audioresample ! amix."
        i=$((i + 1))
    done
    echo "$pipeline"
}

# CPU ms (user + system) of a command, its output thrown away.
cpu_ms() {
    local TIMEFORMAT='%U %S'
    { time "$@" >/dev/null; } 2>&1 | tail -n 1 | awk '{printf "%.0f", ($1 + $2) * 1000}'
}

for n in "${counts[@]}"; do
    side=$(python3 -c "import math; print(math.ceil(math.sqrt($n)))")
    # The template: an even grid, as the contract's JSON.
    python3 - "$n" "$side" > "$WORK/grid$n.json" <<'PY'
import json, sys
n, side = int(sys.argv[1]), int(sys.argv[2])
positions = [{"participant": f"in{i}", "source": "camera", "contentMode": "fill",
              "rect": {"x": (i % side) / side, "y": (i // side) / side, "width": 1 / side, "height": 1 / side}} for i in range(n)]
print(json.dumps({"canvas": {"width": 1280, "height": 720, "fps": 30, "background": "#101010"}, "positions": positions}))
PY
    inputs=()
    for i in $(seq 0 $((n - 1))); do inputs+=("$WORK/in$i.webm"); done

    frames=$((SECONDS_OF_MEDIA * 30))
    if [ -n "${AB_ROUNDS:-}" ] && [ -n "${BEFORE:-}" ]; then
        this_cpu=() before_cpu=() ab_ratios=()
        for round in $(seq "$AB_ROUNDS"); do
            order=("$TESSERA" "$BEFORE")
            [ $((round % 2)) -eq 0 ] && order=("$BEFORE" "$TESSERA")
            for build in "${order[@]}"; do
                ms=$(cpu_ms "$build" compose --template "$WORK/grid$n.json" --out "$WORK/ab$n.webm" "${inputs[@]}")
                if [ "$build" = "$TESSERA" ]; then this_cpu+=("$ms"); else before_cpu+=("$ms"); fi
            done
            ab_ratios+=("$(python3 -c "print(f'{${this_cpu[-1]} / ${before_cpu[-1]}:.4f}')")")
        done
        printf 'compose %2d inputs, %s rounds alternated: this build %.2f ms CPU/frame, before %.2f | this build / before, the median of the rounds: %s\n' \
            "$n" "$AB_ROUNDS" "$(python3 -c "print($(printf '%s\n' "${this_cpu[@]}" | median) / $frames)")" \
            "$(python3 -c "print($(printf '%s\n' "${before_cpu[@]}" | median) / $frames)")" "$(printf '%s\n' "${ab_ratios[@]}" | median)"
        continue
    fi

    starts=()
    for i in $(seq 0 $((n - 1))); do starts+=("$WORK/start/in$i.webm"); done
    tessera_fps=() gst_fps=() shares=() tessera_cpu=() gst_cpu=() before_cpu=() tessera_start=() gst_start=() before_start=() ratios=()
    TIMEFORMAT='%R %U %S'
    for run in $(seq "${RUNS:-3}"); do
        tessera_start+=("$(cpu_ms $TESSERA compose --template "$WORK/grid$n.json" --out "$WORK/start-out$n.webm" "${starts[@]}")")
        # shellcheck disable=SC2046
        gst_start+=("$(cpu_ms gst-launch-1.0 -q $(gst_pipeline "$WORK/gst-start$n.webm" "${starts[@]}"))")
        if [ -n "${BEFORE:-}" ]; then
            before_start+=("$(cpu_ms "$BEFORE" compose --template "$WORK/grid$n.json" --out "$WORK/start-before$n.webm" "${starts[@]}")")
        fi
        if [ -n "${BEFORE:-}" ]; then
            { time "$BEFORE" compose --template "$WORK/grid$n.json" --out "$WORK/before$n.webm" "${inputs[@]}" > /dev/null; } 2> "$WORK/time"
            before_cpu+=("$(awk -v f=$frames '{printf "%.2f", ($2 + $3) * 1000 / f}' "$WORK/time")")
        fi
        { time $TESSERA compose --template "$WORK/grid$n.json" --out "$WORK/out$n.webm" "${inputs[@]}" > "$WORK/line"; } 2> "$WORK/time"
        line=$(cat "$WORK/line")
        tessera_fps+=("$(echo "$line" | sed -E 's/.*\(([0-9.]+) frames\/s.*/\1/')")
        shares+=("$(echo "$line" | sed -E 's/.*codecs ([0-9]+)%.*/\1/')")
        tessera_cpu+=("$(awk -v f=$frames '{printf "%.2f", ($2 + $3) * 1000 / f}' "$WORK/time")")

        # GStreamer: the same grid, decoder, scaler, compositor and VP8 encoder settings.
        # shellcheck disable=SC2046
        { time gst-launch-1.0 -q $(gst_pipeline "$WORK/gst$n.webm" "${inputs[@]}") >/dev/null; } 2> "$WORK/time"
        gst_fps+=("$(awk -v f=$frames '{printf "%.1f", f / $1}' "$WORK/time")")
        gst_cpu+=("$(awk -v f=$frames '{printf "%.2f", ($2 + $3) * 1000 / f}' "$WORK/time")")
        ratios+=("$(python3 -c "print(f'{${gst_cpu[-1]} / ${tessera_cpu[-1]}:.2f}')")")
    done
    t=$(printf '%s\n' "${tessera_fps[@]}" | median)
    g=$(printf '%s\n' "${gst_fps[@]}" | median)
    s=$(printf '%s\n' "${shares[@]}" | median)
    tc=$(printf '%s\n' "${tessera_cpu[@]}" | median)
    gc=$(printf '%s\n' "${gst_cpu[@]}" | median)
    printf 'compose %2d inputs: tessera %6.1f frames/s, %5.2f ms CPU/frame (codecs %s%% of its time) | gstreamer %6.1f frames/s, %5.2f ms CPU/frame | CPU ratio gst/tessera %.2f\n' \
        "$n" "$t" "$tc" "$s" "$g" "$gc" "$(python3 -c "print($gc / $tc)")"
    printf "           each run's ratio gst/tessera: %s (median %s)\n" "${ratios[*]}" "$(printf '%s\n' "${ratios[@]}" | median)"
    printf '           start (3 frames composed): tessera %s ms CPU | gstreamer %s ms CPU\n' \
        "$(printf '%s\n' "${tessera_start[@]}" | median)" "$(printf '%s\n' "${gst_start[@]}" | median)"
    if [ -n "${BEFORE:-}" ]; then
        printf '           start before: %s ms CPU\n' "$(printf '%s\n' "${before_start[@]}" | median)"
        bc=$(printf '%s\n' "${before_cpu[@]}" | median)
        printf '           before: %5.2f ms CPU/frame | this build / before %.3f | CPU ratio gst/before %.2f\n' \
            "$bc" "$(python3 -c "print($tc / $bc)")" "$(python3 -c "print($gc / $bc)")"
    fi
done
