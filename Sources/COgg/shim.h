// libogg: Ogg page and packet framing (RFC 3533) for reading Ogg Opus files.
#ifndef TESSERA_COGG_SHIM_H
#define TESSERA_COGG_SHIM_H
#include <ogg/ogg.h>
#endif
