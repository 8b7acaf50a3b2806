// Data types of NPU kernels and the bf16 conversions the host side needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace xdna {

enum class npu_dtype { bf16, i8, f32, i32 };

const char* npu_dtype_name(npu_dtype t);
size_t npu_dtype_size(npu_dtype t);
bool npu_dtype_parse(const std::string& s, npu_dtype* out);

// fp32 -> bf16, round to nearest even (what the NPU kernels are fed); NaN stays a quiet NaN.
inline uint16_t npu_f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        return static_cast<uint16_t>((u >> 16) | 0x40u);
    }
    u += 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

inline float npu_bf16_to_f32(uint16_t h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

} // namespace xdna
