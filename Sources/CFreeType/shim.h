// FreeType: glyphs for names and placeholders drawn on tiles.
#ifndef TESSERA_CFREETYPE_SHIM_H
#define TESSERA_CFREETYPE_SHIM_H
#include <ft2build.h>
#include FT_FREETYPE_H
#endif
