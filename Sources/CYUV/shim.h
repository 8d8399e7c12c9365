// libyuv: scaling, planar copies, rotation and mirroring of I420 frames. Only the public C headers.
#ifndef TESSERA_CYUV_SHIM_H
#define TESSERA_CYUV_SHIM_H
#include <libyuv/version.h>
#include <libyuv/convert.h>
#include <libyuv/convert_argb.h>
#include <libyuv/planar_functions.h>
#include <libyuv/rotate.h>
#include <libyuv/scale.h>

static inline int tessera_libyuv_version(void) { return LIBYUV_VERSION; }
#endif
