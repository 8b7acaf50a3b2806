#pragma once

// The CPU backend's x86 repacked layouts and their inverse (internal).
//
// Every layout takes 8 consecutive rows (a "group") and, for each block column x, builds one x8 block from the 8 plain
// blocks at column x. An x8 block is exactly 8 plain blocks in size, so group g starts at byte g * 8 * nb1 and block
// column x of that group at x * sizeof(x8 block). Inside an x8 block the per-row scales come first (entry j = row j);
// the quants are a sequence of 8-byte chunks where chunk i holds bytes [(i / 8) * 8, (i / 8) * 8 + 8) of row i % 8.
// Q4_0 XORs every quant byte with 0x88; Q4_K and Q2_K re-pack their sub-block scales across the 8 rows.

#include "ggml_blocks.h"
#include "ggml.h"

#include <cstddef>
#include <cstdint>

namespace xdna {

// The x8 blocks of the CPU's repacked layouts.
struct blk_q4_0x8   { uint16_t d[8]; uint8_t qs[128]; };
struct blk_q4_Kx8   { uint16_t d[8]; uint16_t dmin[8]; uint8_t scales[96]; uint8_t qs[1024]; };
struct blk_q2_Kx8   { uint16_t d[8]; uint16_t dmin[8]; uint8_t scales[128]; uint8_t qs[512]; };
struct blk_iq4_nlx8 { uint16_t d[8]; uint8_t qs[128]; };
struct blk_mxfp4x8  { uint8_t e[8]; uint8_t qs[128]; };

static_assert(sizeof(blk_q4_0x8)   == 8 * sizeof(blk_q4_0),   "an x8 block is 8 plain blocks");
static_assert(sizeof(blk_q4_Kx8)   == 8 * sizeof(blk_q4_K),   "an x8 block is 8 plain blocks");
static_assert(sizeof(blk_q2_Kx8)   == 8 * sizeof(blk_q2_K),   "an x8 block is 8 plain blocks");
static_assert(sizeof(blk_iq4_nlx8) == 8 * sizeof(blk_iq4_nl), "an x8 block is 8 plain blocks");
static_assert(sizeof(blk_mxfp4x8)  == 8 * sizeof(blk_mxfp4),  "an x8 block is 8 plain blocks");

constexpr int REPACK_ROWS = 8;

// Size of the plain block of a type with an x86 repacked layout, 0 for any other type.
size_t repack_plain_block_size(ggml_type type);

// Block elements (columns per block) of such a type, 0 for any other type.
int64_t repack_block_elems(ggml_type type);

// Extracts row j (0..7) of block columns [x0, x1) of one group: `group` points at the group's first x8 block, dst
// receives (x1 - x0) plain blocks. Returns false for a type without a repacked layout.
bool unrepack_row(ggml_type type, const void * group, int j, int64_t x0, int64_t x1, void * dst);

}  // namespace xdna
