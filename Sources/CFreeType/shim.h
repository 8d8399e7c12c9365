// FreeType: glyphs for names and placeholders drawn on tiles.
#ifndef TESSERA_CFREETYPE_SHIM_H
#define TESSERA_CFREETYPE_SHIM_H
#include <ft2build.h>
#include FT_FREETYPE_H

/// FT_LOAD_RENDER: load the glyph and render it to an 8-bit grey (anti-aliased) bitmap.
static inline FT_Int32 tessera_FT_LOAD_RENDER(void) { return FT_LOAD_RENDER | FT_LOAD_TARGET_NORMAL; }
#endif
