#pragma once

// Scalar forms of the element operations, shared by every kernel table (internal). Only `static inline` functions:
// each file gets its own copy, so a copy compiled for AVX-512 is never called from generic code.

#include "ggml.h"

#include <cstdint>
#include <cstring>

namespace xdna {

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// ggml's fp32 -> bf16 rule: a NaN keeps its sign and top bits and is made quiet; everything else rounds to nearest
// even (an overflow rounds to Inf, subnormals are kept).
static inline uint16_t bf16_bits(float f) {
    const uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t) ((u >> 16) | 64);
    }
    return (uint16_t) ((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

static inline int8_t int8_rne(float x, float inv) {
    float v = x * inv;
    // Clamping first gives the same result (the bounds are integers) and keeps v small enough for the rounding trick:
    // adding and subtracting 1.5 * 2^23 rounds to an integer in the current mode (nearest even), like cvtps2dq.
    v = v < 127.0f ? v : 127.0f;  // written as minss / maxss so that the loops vectorize
    v = v > -127.0f ? v : -127.0f;
    v = (v + 12582912.0f) - 12582912.0f;
    return (int8_t) v;
}

}  // namespace xdna
