#include "CPictureDifference.h"
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { MAX_CHUNKS = 1024 };  // 16-sample chunks in a row: planes up to 16384 samples wide

void tessera_blocks_within(const uint8_t *a, ptrdiff_t stride_a, const uint8_t *b, ptrdiff_t stride_b,
                           int width, int height, int side, int columns, uint8_t tolerance, uint8_t *within) {
    if ((side != 16 && side != 8) || width <= 0 || height <= 0) return;
    const int chunks = (width + 15) / 16, full_chunks = width / 16;
    if (chunks > MAX_CHUNKS || (width + side - 1) / side > columns) return;
    // The largest difference so far in each sample position of a row of blocks, 16 at a time:
    // rows are read whole and in order, and each block is judged once at the end of its rows.
    uint8_t largest[MAX_CHUNKS * 16] __attribute__((aligned(16)));
    const int rows = (height + side - 1) / side, used_columns = (width + side - 1) / side;
    // Whether a chunk's blocks (one 16-wide block, or two 8-wide) are all out already.
    uint8_t done[MAX_CHUNKS];
    for (int row = 0; row < rows; row++) {
        uint8_t *entries = within + (ptrdiff_t)row * columns;
        int open = 0;
        for (int chunk = 0; chunk < chunks; chunk++) {
            int last = (chunk * 16 + 15) / side;
            if (last > used_columns - 1) last = used_columns - 1;
            done[chunk] = 1;
            for (int column = chunk * 16 / side; column <= last; column++) if (entries[column]) done[chunk] = 0;
            open |= !done[chunk];
        }
        // A plane compared after another skips the blocks the other found out: a camera's tile
        // fails on luma, and its chroma is not read.
        if (!open) continue;
        memset(largest, 0, (size_t)chunks * 16);
        const int top = row * side, last = top + side < height ? top + side : height;
        for (int y = top; y < last; y++) {
            const uint8_t *row_a = a + (ptrdiff_t)y * stride_a, *row_b = b + (ptrdiff_t)y * stride_b;
            int chunk = 0;
#if defined(__SSE2__)
            for (; chunk < full_chunks; chunk++) {
                if (done[chunk]) continue;
                __m128i p = _mm_loadu_si128((const __m128i *)(row_a + chunk * 16));
                __m128i q = _mm_loadu_si128((const __m128i *)(row_b + chunk * 16));
                __m128i difference = _mm_or_si128(_mm_subs_epu8(p, q), _mm_subs_epu8(q, p));
                __m128i *slot = (__m128i *)(largest + chunk * 16);
                _mm_store_si128(slot, _mm_max_epu8(_mm_load_si128(slot), difference));
            }
#endif
            for (int x = chunk * 16; x < width; x++) {
                int d = (int)row_a[x] - (int)row_b[x];
                uint8_t magnitude = (uint8_t)(d < 0 ? -d : d);
                if (magnitude > largest[x]) largest[x] = magnitude;
            }
        }
        for (int x = 0, column = 0; x < width; x += side, column++) {
            if (!entries[column]) continue;
            const int end = x + side < width ? x + side : width;
            for (int i = x; i < end; i++) {
                if (largest[i] > tolerance) {
                    entries[column] = 0;
                    break;
                }
            }
        }
    }
}
