// Which blocks of a picture plane another plane matches within a tolerance: the VP8 encoder's
// settled blocks (its active map).
#ifndef TESSERA_CPICTUREDIFFERENCE_H
#define TESSERA_CPICTUREDIFFERENCE_H
#include <stddef.h>
#include <stdint.h>

/// For each `side` x `side` block (`side` 16 or 8) of a `width` x `height` plane whose entry in
/// `within` is not 0: sets it to 0 unless every sample of `a` in the block is within `tolerance`
/// of `b`'s. Blocks on the right and bottom edges may be partial. `within` holds `columns` (at
/// least ceil(width / side)) entries per row of blocks, ceil(height / side) rows. Blocks whose
/// entry is already 0 are not read.
void tessera_blocks_within(const uint8_t *a, ptrdiff_t stride_a, const uint8_t *b, ptrdiff_t stride_b,
                           int width, int height, int side, int columns, uint8_t tolerance, uint8_t *within);
#endif
