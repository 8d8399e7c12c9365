// RTP and RTCP wire formats (RFC 3550, RFC 8285, RFC 4585, RFC 5104), VP8 (RFC 7741) and Opus
// (RFC 7587) payloads. Pure Swift and sans-IO: bytes in, values out, typed errors on bad input.
//
// Contract: every `parse` takes untrusted bytes and either returns a value or throws the typed
// error of its family (`RTPParseError`, `RTCPParseError`, `VP8ParseError`, `OpusParseError`); it
// never traps. Every value a parser returns serializes back to bytes that parse to an equal value.
// Sequence numbers are plain `UInt16`, RTP timestamps plain `UInt32`; sources are `SSRC` and
// payload types `PayloadType`.
