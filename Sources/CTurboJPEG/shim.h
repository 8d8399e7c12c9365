// TurboJPEG (libjpeg-turbo's API 2.x): placeholder pictures sent as JPEG.
#ifndef TESSERA_CTURBOJPEG_SHIM_H
#define TESSERA_CTURBOJPEG_SHIM_H
#include <turbojpeg.h>
#endif
