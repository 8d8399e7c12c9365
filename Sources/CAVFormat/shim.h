// libavformat (with libavcodec and libavutil): WebM muxing and demuxing for recordings.
#ifndef TESSERA_CAVFORMAT_SHIM_H
#define TESSERA_CAVFORMAT_SHIM_H
#include <stdio.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mathematics.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>

static inline int tessera_AVERROR_EOF(void) { return AVERROR_EOF; }
static inline int tessera_AVERROR_EAGAIN(void) { return AVERROR(EAGAIN); }
/// AVERROR(e): a POSIX errno as libav returns it (negated).
static inline int tessera_AVERROR(int errnum) { return AVERROR(errnum); }
static inline int tessera_AVERROR_INVALIDDATA(void) { return AVERROR_INVALIDDATA; }
static inline int tessera_AVERROR_DEMUXER_NOT_FOUND(void) { return AVERROR_DEMUXER_NOT_FOUND; }
static inline int64_t tessera_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }
static inline int tessera_AV_INPUT_BUFFER_PADDING_SIZE(void) { return AV_INPUT_BUFFER_PADDING_SIZE; }

/// av_err2str without its compound literal: the text for `errnum` into `buffer`.
static inline const char *tessera_av_err2str(int errnum, char *buffer, size_t size) {
    if (av_strerror(errnum, buffer, size) < 0 && size > 0) {
        snprintf(buffer, size, "libav error %d", errnum);
    }
    return buffer;
}
#endif
