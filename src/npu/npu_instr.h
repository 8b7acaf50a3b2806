// Reading an NPU instruction stream file: raw little-endian 32-bit words (.bin), or one hex word per line (.txt),
// the two forms mlir-aie's aiecc writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Throws npu_error(npu_errc::kernel) naming the file and what is wrong with it.
std::vector<uint32_t> npu_load_instr(const std::string& path);

} // namespace xdna
