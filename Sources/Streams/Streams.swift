// Receive and send streams: statistics, NACK, RTX, keyframe requests, SR/RR, bandwidth estimates.
//
// Sans-IO (the str0m shape): packets and the time (`now: Instant`) come in as arguments; RTCP
// packets and retransmissions come out of return values and `poll…` methods; every engine with
// timers reports `nextTimeout`. Nothing here reads a clock, opens a socket or starts a thread.
// Contract: after every input (a packet, or a timeout at `nextTimeout`), drain the engine's
// `poll…` methods, then arm a timer for its `nextTimeout`.
