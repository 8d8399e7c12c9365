// Tracks, the AudioCompositor and VideoCompositor, layout templates and the TrackRecorder.
