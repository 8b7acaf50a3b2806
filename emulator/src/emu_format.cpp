// The emulator's kernel file formats (see emu_format.h).
#include "xdna_emu/emu_format.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace xdna_emu {

const char* dtype_name(dtype t) {
    switch (t) {
        case dtype::bf16: return "bf16";
        case dtype::i8:   return "i8";
        case dtype::f32:  return "f32";
        case dtype::i32:  return "i32";
    }
    return "?";
}

size_t dtype_size(dtype t) {
    switch (t) {
        case dtype::bf16: return 2;
        case dtype::i8:   return 1;
        case dtype::f32:  return 4;
        case dtype::i32:  return 4;
    }
    return 0;
}

bool dtype_parse(const std::string& s, dtype* out) {
    static const dtype all[] = {dtype::bf16, dtype::i8, dtype::f32, dtype::i32};
    for (dtype t : all) {
        if (s == dtype_name(t)) {
            *out = t;
            return true;
        }
    }
    return false;
}

std::string design_check(const design& d) {
    const bool bf16 = d.a == dtype::bf16 && d.b == dtype::bf16 && d.c == dtype::f32;
    const bool int8 = d.a == dtype::i8 && d.b == dtype::i8 && d.c == dtype::i32;
    const bool mixed = d.a == dtype::bf16 && d.b == dtype::i8 && d.c == dtype::f32;
    if (!bf16 && !int8 && !mixed) {
        return std::string("unsupported data types ") + dtype_name(d.a) + " x " + dtype_name(d.b) + " -> " +
               dtype_name(d.c) + " (the model computes bf16 x bf16 -> f32, i8 x i8 -> i32, bf16 x i8 -> f32)";
    }
    if (d.columns < 1 || d.columns > 4) {
        return "columns must be 1..4 on npu1, got " + std::to_string(d.columns);
    }
    // The AIE2 MAC shapes (r, s, t): bf16 4x8x4, i8 4x8x8; mm.cc asks m % 16, k % 8, n % 16 on top.
    if (d.tile_m == 0 || d.tile_m % 16 || d.tile_k == 0 || d.tile_k % 8 || d.tile_n == 0 || d.tile_n % 16) {
        return "tile " + std::to_string(d.tile_m) + "x" + std::to_string(d.tile_k) + "x" + std::to_string(d.tile_n) +
               " must have m % 16 == 0, k % 8 == 0, n % 16 == 0";
    }
    if (d.k == 0 || d.k % d.tile_k) {
        return "k " + std::to_string(d.k) + " must be a positive multiple of tile k " + std::to_string(d.tile_k);
    }
    const size_t sa = dtype_size(d.a), sb = dtype_size(d.b), sc = dtype_size(d.c);
    // Double-buffered A and B and C tiles plus the core stack (0xD00) must fit a core's 64 KiB.
    const size_t l1 = 2 * d.tile_m * d.tile_k * sa + 2 * d.tile_k * d.tile_n * sb + 2 * d.tile_m * d.tile_n * sc + 0xD00;
    if (l1 > 65536) {
        return "tile needs " + std::to_string(l1) + " bytes of core memory, more than 65536";
    }
    return "";
}

std::string design_check_block(const design& d, uint32_t m, uint32_t n) {
    // whole_array distributes A tiles down the 4 core rows and B tiles across the columns.
    if (m == 0 || m % (4 * d.tile_m)) {
        return "m " + std::to_string(m) + " is not a multiple of 4 x tile m (" + std::to_string(4 * d.tile_m) + ")";
    }
    if (n == 0 || n % (d.columns * d.tile_n)) {
        return "n " + std::to_string(n) + " is not a multiple of columns x tile n (" +
               std::to_string(d.columns * d.tile_n) + ")";
    }
    return "";
}

static uint32_t fnv1a(const uint32_t* words, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; ++i) {
        for (int byte = 0; byte < 4; ++byte) {
            h ^= (words[i] >> (8 * byte)) & 0xFFu;
            h *= 16777619u;
        }
    }
    return h;
}

static uint32_t pack_types(const design& d) {
    return static_cast<uint32_t>(d.a) | static_cast<uint32_t>(d.b) << 8 | static_cast<uint32_t>(d.c) << 16;
}

std::vector<uint32_t> instr_encode(const design& d, uint32_t m, uint32_t n) {
    std::vector<uint32_t> w = {instr_magic, instr_version, instr_op_gemm, static_cast<uint32_t>(instr_words),
                               m, d.k, n, d.tile_m, d.tile_k, d.tile_n, d.columns, pack_types(d), 0};
    w[instr_words - 1] = fnv1a(w.data(), instr_words - 1);
    return w;
}

std::string instr_decode(const design& d, const uint32_t* w, size_t n_words, gemm_block* out) {
    if (n_words < instr_words) {
        return "instruction stream has " + std::to_string(n_words) + " words, a block needs " +
               std::to_string(instr_words);
    }
    if (w[0] != instr_magic) {
        char buf[96];
        std::snprintf(buf, sizeof(buf), "instruction stream starts with 0x%08x, not the magic 0x%08x", w[0], instr_magic);
        return buf;
    }
    if (w[1] != instr_version || w[2] != instr_op_gemm || w[3] != instr_words) {
        return "instruction stream has an unknown version, opcode or length";
    }
    if (fnv1a(w, instr_words - 1) != w[instr_words - 1]) {
        return "instruction stream checksum mismatch (corrupt or partly synced)";
    }
    if (w[5] != d.k || w[7] != d.tile_m || w[8] != d.tile_k || w[9] != d.tile_n || w[10] != d.columns ||
        w[11] != pack_types(d)) {
        return "instruction stream was built for another design (k " + std::to_string(w[5]) + ", design k " +
               std::to_string(d.k) + "): the core program would wait forever";
    }
    const std::string bad = design_check_block(d, w[4], w[6]);
    if (!bad.empty()) {
        return "instruction stream block: " + bad;
    }
    out->m = w[4];
    out->k = w[5];
    out->n = w[6];
    return "";
}

std::string xclbin_uuid(const design& d) {
    const std::string desc = d.name + "/" + d.kernel_name + "/" + dtype_name(d.a) + dtype_name(d.b) + dtype_name(d.c) +
                             "/" + std::to_string(d.tile_m) + "x" + std::to_string(d.tile_k) + "x" +
                             std::to_string(d.tile_n) + "/" + std::to_string(d.columns) + "/" + std::to_string(d.k);
    // Four FNV-1a passes with different seeds give the 128 bits.
    uint32_t parts[4];
    for (uint32_t p = 0; p < 4; ++p) {
        uint32_t h = 2166136261u ^ (p * 0x9E3779B9u);
        for (unsigned char ch : desc) {
            h ^= ch;
            h *= 16777619u;
        }
        parts[p] = h;
    }
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%04x%08x", parts[0], parts[1] >> 16, parts[1] & 0xFFFFu,
                  parts[2] >> 16, parts[2] & 0xFFFFu, parts[3]);
    return buf;
}

std::string xclbin_text(const design& d) {
    using json = nlohmann::ordered_json;
    json args = json::array();
    args.push_back({{"name", "opcode"}, {"kind", "scalar"}, {"size", 8}});
    args.push_back({{"name", "instr"}, {"kind", "global"}, {"bank", 1}, {"size", 8}});
    args.push_back({{"name", "ninstr"}, {"kind", "scalar"}, {"size", 4}});
    for (int i = 0; i < 5; ++i) {
        args.push_back({{"name", "bo" + std::to_string(i)}, {"kind", "global"}, {"bank", 0}, {"size", 8}});
    }
    json doc = {
        {"format", "xdna-emu-xclbin"},
        {"version", 1},
        {"uuid", xclbin_uuid(d)},
        {"platform", "npu1 (Phoenix / Hawk Point), software XDNA1 emulator"},
        {"memories", json::array({json{{"index", 0}, {"tag", "HOST"}}, json{{"index", 1}, {"tag", "SRAM"}}})},
        {"kernels", json::array({json{{"name", d.kernel_name}, {"type", "dpu"}, {"args", args}}})},
        {"design",
         {{"name", d.name},
          {"a", dtype_name(d.a)},
          {"b", dtype_name(d.b)},
          {"c", dtype_name(d.c)},
          {"b_layout", "nk"},
          {"tile", {d.tile_m, d.tile_k, d.tile_n}},
          {"columns", d.columns},
          {"k", d.k}}},
    };
    return doc.dump(2) + "\n";
}

} // namespace xdna_emu
