// Reading an NPU instruction stream file: raw little-endian 32-bit words, or one hex word per line, the two forms
// mlir-aie's aiecc has written. The form is decided from the content, never from the file name: aiecc writes raw
// words since mlir-aie b0baba5c0 (2025-03, "Use TXN bin rather than text format") while mlir-aie's makefile-common
// may still name the file insts_<suffix>.txt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Throws npu_error(npu_errc::kernel) naming the file and what is wrong with it.
std::vector<uint32_t> npu_load_instr(const std::string& path);

// The same from bytes already read; `what` names them in errors. Text: every byte is printable ASCII or white
// space (a real instruction stream in raw words always has bytes outside that range: its opcodes and most of its
// header bytes are below 0x20). Text lines hold one hex word each ("0x" optional), blank lines and lines starting
// with '#' are skipped. Binary: a whole number of little-endian 32-bit words.
std::vector<uint32_t> npu_parse_instr(const std::string& data, const std::string& what);

// The header aiecc puts at the start of a hardware instruction stream (mlir-aie, AIETargetNPU.cpp): word 0 =
// rows << 24 | device generation << 16 | version (npu1, Phoenix / Hawk Point: 6 rows, generation 3: 0x06030100;
// npu2, Strix / Krackan: generation 4), word 3 = the stream's size in bytes. Throws npu_error(npu_errc::kernel), one
// line naming `what`, for a stream of another device or one whose size differs from its header's (a truncated
// file). For hardware streams only: the software XDNA1's own streams have a format of their own.
void npu_check_instr_header(const std::vector<uint32_t>& words, const std::string& what);

} // namespace xdna
