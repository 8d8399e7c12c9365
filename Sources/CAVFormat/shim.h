// libavformat (with libavcodec and libavutil): WebM muxing and demuxing for recordings.
#ifndef TESSERA_CAVFORMAT_SHIM_H
#define TESSERA_CAVFORMAT_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/mathematics.h>

static inline int tessera_AVERROR_EOF(void) { return AVERROR_EOF; }
static inline int tessera_AVERROR_EAGAIN(void) { return AVERROR(EAGAIN); }
#endif
