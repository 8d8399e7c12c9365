// libpng: placeholder pictures sent as PNG, read by its simplified API (png_image).
#ifndef TESSERA_CPNG_SHIM_H
#define TESSERA_CPNG_SHIM_H
#include <png.h>
#endif
