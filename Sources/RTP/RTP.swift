// RTP and RTCP wire formats (RFC 3550, RFC 8285, RFC 4585, RFC 5104), VP8 (RFC 7741) and Opus
// (RFC 7587) payloads. Pure Swift and sans-IO: bytes in, values out, typed errors on bad input.
