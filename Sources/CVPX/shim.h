// libvpx VP8 encoder and decoder. vpx_codec_enc_init, vpx_codec_dec_init and vpx_codec_control
// are macros (the last variadic), so they are wrapped here with fixed types.
#ifndef TESSERA_CVPX_SHIM_H
#define TESSERA_CVPX_SHIM_H
#include <string.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vpx_encoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

static inline vpx_codec_err_t tessera_vpx_enc_init_vp8(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg,
                                                       vpx_codec_flags_t flags) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, flags);
}
static inline vpx_codec_err_t tessera_vpx_dec_init_vp8(vpx_codec_ctx_t *ctx, const vpx_codec_dec_cfg_t *cfg,
                                                       vpx_codec_flags_t flags) {
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), cfg, flags);
}
/// vpx_codec_control with an int argument (VP8E_SET_CPUUSED, VP8E_SET_NOISE_SENSITIVITY, ...).
static inline vpx_codec_err_t tessera_vpx_control_int(vpx_codec_ctx_t *ctx, int id, int value) {
    return vpx_codec_control_(ctx, id, value);
}
/// vpx_codec_control with a pointer argument (VP8D_GET_FRAME_CORRUPTED, VP8E_GET_LAST_QUANTIZER...).
static inline vpx_codec_err_t tessera_vpx_control_int_pointer(vpx_codec_ctx_t *ctx, int id, int *value) {
    return vpx_codec_control_(ctx, id, value);
}
/// vpx_codec_control(VP8E_SET_ACTIVEMAP): blocks marked 0 are coded as skipped (NULL map: all active).
static inline vpx_codec_err_t tessera_vpx_set_active_map(vpx_codec_ctx_t *ctx, vpx_active_map_t *map) {
    return vpx_codec_control_(ctx, VP8E_SET_ACTIVEMAP, map);
}
/// vpx_codec_control(VP8E_SET_ROI_MAP) with two segments (RFC 6386 §9.3): blocks marked 0 go
/// into segment 0, whose loop filter level is brought down to 0 (§15: not filtered), blocks marked
/// 1 into segment 1, unchanged. A NULL map turns segmentation off.
static inline vpx_codec_err_t tessera_vpx_set_unfiltered_blocks(vpx_codec_ctx_t *ctx, unsigned char *map,
                                                               unsigned int rows, unsigned int cols) {
    vpx_roi_map_t roi;
    memset(&roi, 0, sizeof roi);
    roi.roi_map = map;
    roi.rows = rows;
    roi.cols = cols;
    roi.delta_lf[0] = -63;
    return vpx_codec_control_(ctx, VP8E_SET_ROI_MAP, &roi);
}
/// Macros whose values Swift would otherwise have to spell out.
static const unsigned long tessera_vpx_deadline_realtime = VPX_DL_REALTIME;
static const vpx_enc_frame_flags_t tessera_vpx_eflag_force_kf = VPX_EFLAG_FORCE_KF;
static const vpx_codec_frame_flags_t tessera_vpx_frame_is_key = VPX_FRAME_IS_KEY;
static const int tessera_vpx_error_resilient_default = VPX_ERROR_RESILIENT_DEFAULT;
#endif
