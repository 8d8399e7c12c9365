// Tracks, the AudioCompositor and VideoCompositor, and layout templates: the seed's public API.
//
// Thread confinement: every class here (`AudioTrack`, `VideoTrack`, `AudioCompositor`,
// `VideoCompositor`, `MixMinus`'s state) belongs to one room's loop and is used on that thread
// only; none is `Sendable`. A decoder on another thread hands its frames to the room's loop,
// which pushes them into the track. Nothing here reads a clock: every call that depends on time
// takes `now`, so a `ManualClock` drives the same code in tests and in offline composing.
