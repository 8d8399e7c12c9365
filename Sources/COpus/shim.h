// libopus. opus_encoder_ctl and opus_decoder_ctl are variadic; each request Tessera makes has a
// typed wrapper here.
#ifndef TESSERA_COPUS_SHIM_H
#define TESSERA_COPUS_SHIM_H
#include <stddef.h>
#include <opus/opus.h>

static inline int tessera_opus_set_bitrate(OpusEncoder *e, opus_int32 bps) { return opus_encoder_ctl(e, OPUS_SET_BITRATE(bps)); }
static inline int tessera_opus_set_complexity(OpusEncoder *e, opus_int32 c) { return opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(c)); }
static inline int tessera_opus_set_inband_fec(OpusEncoder *e, opus_int32 on) { return opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(on)); }
static inline int tessera_opus_set_packet_loss_perc(OpusEncoder *e, opus_int32 p) { return opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(p)); }
static inline int tessera_opus_set_dtx(OpusEncoder *e, opus_int32 on) { return opus_encoder_ctl(e, OPUS_SET_DTX(on)); }
static inline int tessera_opus_set_signal(OpusEncoder *e, opus_int32 s) { return opus_encoder_ctl(e, OPUS_SET_SIGNAL(s)); }
static inline int tessera_opus_reset_encoder(OpusEncoder *e) { return opus_encoder_ctl(e, OPUS_RESET_STATE); }
static inline int tessera_opus_decoder_last_duration(OpusDecoder *d, opus_int32 *samples) {
    return opus_decoder_ctl(d, OPUS_GET_LAST_PACKET_DURATION(samples));
}
static inline int tessera_opus_set_vbr(OpusEncoder *e, opus_int32 on) { return opus_encoder_ctl(e, OPUS_SET_VBR(on)); }
static inline int tessera_opus_get_lookahead(OpusEncoder *e, opus_int32 *samples) { return opus_encoder_ctl(e, OPUS_GET_LOOKAHEAD(samples)); }
static inline int tessera_opus_reset_decoder(OpusDecoder *d) { return opus_decoder_ctl(d, OPUS_RESET_STATE); }

/// Whether an Opus packet carries SILK low-bit-rate redundancy (in-band FEC) for the frame before
/// it: libopus 1.5's opus_packet_has_lbrr, which 1.3 lacks. RFC 6716 §4.2.3: the LBRR flag of
/// the first SILK frame follows the VAD flags at the start of the range-coded data (coded with
/// equal probability, so the raw bits can be read directly). 1 yes, 0 no, negative: malformed.
static inline int tessera_opus_packet_has_lbrr(const unsigned char *packet, opus_int32 len) {
    const unsigned char *frames[48];
    opus_int16 size[48];
    if (len < 1) return OPUS_BAD_ARG;
    if (packet[0] & 0x80) return 0;  /* CELT-only configs (16-31) carry no LBRR */
    int frame_size = opus_packet_get_samples_per_frame(packet, 48000);
    int silk_frames = frame_size > 960 ? frame_size / 960 : 1;
    int channels = opus_packet_get_nb_channels(packet);
    int count = opus_packet_parse(packet, len, NULL, frames, size, NULL);
    if (count <= 0) return count < 0 ? count : 0;
    if (size[0] == 0) return 0;
    int lbrr = (frames[0][0] >> (7 - silk_frames)) & 1;
    if (channels == 2) lbrr = lbrr || ((frames[0][0] >> (6 - 2 * silk_frames)) & 1);
    return lbrr;
}
#endif
