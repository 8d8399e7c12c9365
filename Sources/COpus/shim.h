// libopus. opus_encoder_ctl and opus_decoder_ctl are variadic; each request Tessera makes has a
// typed wrapper here.
#ifndef TESSERA_COPUS_SHIM_H
#define TESSERA_COPUS_SHIM_H
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
#endif
