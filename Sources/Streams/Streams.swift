// Receive and send streams: statistics, NACK, RTX, keyframe requests, SR/RR, bandwidth estimates.
// Sans-IO: packets and the time come in as arguments; RTCP and retransmissions come out.
