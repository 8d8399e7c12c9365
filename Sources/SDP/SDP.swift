// SDP (RFC 8866) parse and serialize, and the host's answer to a WebRTC offer (RFC 8829 JSEP,
// RFC 8843 BUNDLE, Unified Plan).
