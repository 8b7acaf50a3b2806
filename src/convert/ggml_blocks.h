#pragma once

// This library's own definitions of the plain ggml blocks it reads directly (internal). Their sizes are checked here
// against the format, and at run time (repack probe, kernel table) against ggml's type traits.

#include <cstdint>

namespace xdna {

struct blk_q4_0   { uint16_t d; uint8_t qs[16]; };
struct blk_q4_1   { uint16_t d; uint16_t m; uint8_t qs[16]; };
struct blk_q5_0   { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };
struct blk_q5_1   { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[16]; };
struct blk_q8_0   { uint16_t d; int8_t qs[32]; };
struct blk_q2_K   { uint8_t scales[16]; uint8_t qs[64]; uint16_t d; uint16_t dmin; };
struct blk_q3_K   { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; };
struct blk_q4_K   { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qs[128]; };
struct blk_q5_K   { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct blk_q6_K   { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
struct blk_iq4_nl { uint16_t d; uint8_t qs[16]; };
struct blk_iq4_xs { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; };
struct blk_mxfp4  { uint8_t e; uint8_t qs[16]; };

static_assert(sizeof(blk_q4_0)   == 18,  "block_q4_0 is 18 bytes");
static_assert(sizeof(blk_q4_1)   == 20,  "block_q4_1 is 20 bytes");
static_assert(sizeof(blk_q5_0)   == 22,  "block_q5_0 is 22 bytes");
static_assert(sizeof(blk_q5_1)   == 24,  "block_q5_1 is 24 bytes");
static_assert(sizeof(blk_q8_0)   == 34,  "block_q8_0 is 34 bytes");
static_assert(sizeof(blk_q2_K)   == 84,  "block_q2_K is 84 bytes");
static_assert(sizeof(blk_q3_K)   == 110, "block_q3_K is 110 bytes");
static_assert(sizeof(blk_q4_K)   == 144, "block_q4_K is 144 bytes");
static_assert(sizeof(blk_q5_K)   == 176, "block_q5_K is 176 bytes");
static_assert(sizeof(blk_q6_K)   == 210, "block_q6_K is 210 bytes");
static_assert(sizeof(blk_iq4_nl) == 18,  "block_iq4_nl is 18 bytes");
static_assert(sizeof(blk_iq4_xs) == 136, "block_iq4_xs is 136 bytes");
static_assert(sizeof(blk_mxfp4)  == 17,  "block_mxfp4 is 17 bytes");

}  // namespace xdna
