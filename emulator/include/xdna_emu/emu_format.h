// The software XDNA1's kernel files: what its xclbin describes and how its instruction streams are encoded.
// On the hardware an xclbin carries the design (the core programs) and an instruction stream (an aie-rt
// transaction) programs the data movers for one problem size. Here the xclbin describes the block multiply the
// design computes and each instruction stream carries the block shape it runs, so the emulator checks that the
// pair fits together before it computes anything. Both formats are documented in docs/emulator.md.
#ifndef XDNA_EMU_FORMAT_H
#define XDNA_EMU_FORMAT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xdna_emu {

enum class dtype : uint32_t { bf16 = 1, i8 = 2, f32 = 3, i32 = 4 };

const char* dtype_name(dtype t);
size_t dtype_size(dtype t);
bool dtype_parse(const std::string& s, dtype* out);

// One design: what the core programs of an xclbin compute. The reduction length k is part of the design because
// the whole-array core program loops k / tile_k times per output tile; tokens (m) and weight rows (n) are not,
// so one design serves every m and n its instruction streams ask for.
struct design {
    std::string name;            // e.g. "bf16_k1024"
    std::string kernel_name = "MLIR_AIE";
    dtype a = dtype::bf16;       // activations, m x k row-major
    dtype b = dtype::bf16;       // weights, n x k row-major (B column-major)
    dtype c = dtype::f32;        // result, m x n row-major
    uint32_t tile_m = 16, tile_k = 64, tile_n = 64;   // the per-core tile (mlir-aie -m -k -n)
    uint32_t columns = 4;                             // AIE columns used (npu1: at most 4)
    uint32_t k = 1024;
};

// Empty when (a, b, c) is a combination the device model computes, otherwise why not.
std::string design_check(const design& d);
// Empty when an m x n block is one the design's data movers can produce, otherwise why not.
std::string design_check_block(const design& d, uint32_t m, uint32_t n);

// The instruction stream of one block. Words: magic, version, opcode, word count, m, k, n, tile m/k/n, columns,
// packed data types, FNV-1a checksum of everything before it.
constexpr uint32_t instr_magic = 0x554D4558u;   // "XEMU" in little-endian bytes
constexpr uint32_t instr_version = 1;
constexpr uint32_t instr_op_gemm = 1;
constexpr size_t instr_words = 13;

struct gemm_block {
    uint32_t m = 0, k = 0, n = 0;
};

std::vector<uint32_t> instr_encode(const design& d, uint32_t m, uint32_t n);
// Decodes and checks a stream against the design it runs on; returns "" or a one-line reason.
std::string instr_decode(const design& d, const uint32_t* words, size_t n_words, gemm_block* out);

// The emulator's xclbin: a JSON document (format "xdna-emu-xclbin") with the kernel, its arguments, their
// memory banks (instructions in bank 1 "SRAM", data in bank 0 "HOST", as aiecc emits) and the design.
std::string xclbin_text(const design& d);
// The uuid an xclbin of this design carries (a hash of its description, so rebuilding gives the same one).
std::string xclbin_uuid(const design& d);

} // namespace xdna_emu

#endif
