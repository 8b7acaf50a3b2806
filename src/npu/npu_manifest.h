// The kernel manifest: which NPU kernels exist, where their files are, what block each computes.
//
// A JSON file (format "ggml-xdna-kernels", version 1). Kernels are grouped by design: a design is one xclbin,
// so one hardware context, with one kernel name and data types; each of its blocks is an instruction stream for one
// block shape (tokens x k x rows). Switching between blocks of one design is free; switching designs costs a
// context load, so a kernel set should have few designs with many blocks each. docs/emulator.md has an example.
//
//   A: tokens x k, row-major (activations)   B: rows x k, row-major (weights; B column-major)
//   C: tokens x rows, row-major (f32 or i32: the orientation of ggml's dst rows)
#pragma once

#include "npu_types.h"
#include "xdna1_timing.h"

#include <cstddef>
#include <string>
#include <vector>

namespace xdna {

struct npu_kernel {
    int index = 0;              // position in npu_manifest::kernels()
    int design = 0;             // index into npu_manifest::designs()
    std::string name;           // unique in the manifest
    std::string instr_path;     // absolute or relative to the working directory (resolved from the manifest)
    npu_dtype a = npu_dtype::bf16, b = npu_dtype::bf16, c = npu_dtype::f32;
    int tokens = 0, k = 0, rows = 0;

    size_t a_bytes() const { return size_t(tokens) * k * npu_dtype_size(a); }
    size_t b_bytes() const { return size_t(rows) * k * npu_dtype_size(b); }
    size_t c_bytes() const { return size_t(tokens) * rows * npu_dtype_size(c); }
    double flops() const { return 2.0 * tokens * k * rows; }
};

struct npu_design {
    int index = 0;
    std::string name;
    std::string xclbin_path;
    std::string kernel_name;    // the kernel inside the xclbin (mlir-aie: MLIR_AIE)
    npu_dtype a = npu_dtype::bf16, b = npu_dtype::bf16, c = npu_dtype::f32;
    int k = 0;
    xdna1_tile tile;            // the core tile the design was built with (its blocks' cost: xdna1_timing.h)
    std::vector<int> kernels;   // indices into npu_manifest::kernels()
};

class npu_manifest {
public:
    // Parses and checks the file and that every file it names exists; throws npu_error(npu_errc::manifest) with
    // the manifest path and the field at fault.
    static npu_manifest load(const std::string& path);

    const std::string& path() const { return m_path; }
    bool emulator_kernels() const { return m_emulator; }
    const std::vector<npu_design>& designs() const { return m_designs; }
    const std::vector<npu_kernel>& kernels() const { return m_kernels; }
    const npu_design& design_of(const npu_kernel& k) const { return m_designs[k.design]; }

    // The kernel with exactly this block and these types, or nullptr.
    const npu_kernel* find(npu_dtype a, npu_dtype b, int tokens, int k, int rows) const;
    const npu_kernel* find(const std::string& name) const;
    // Every kernel with these input types, by tokens then rows (ascending).
    std::vector<const npu_kernel*> kernels_for(npu_dtype a, npu_dtype b) const;

private:
    std::string m_path;
    bool m_emulator = false;
    std::vector<npu_design> m_designs;
    std::vector<npu_kernel> m_kernels;
};

} // namespace xdna
