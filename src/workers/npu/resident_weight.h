// A converted weight held where the NPU reads it: in one host-only NPU buffer, laid out in K panels (panel p holds
// every row's K block p, rows x kb elements, row r at (p * rows + r) * kb), synced to the device once. A block of
// rb rows of panel p is then a contiguous range of that buffer, and the kernel's B argument is a view of it: the
// host neither copies nor syncs weights per launch, only activations and results.
//
// Such buffers are pinned memory (the driver counts them against RLIMIT_MEMLOCK); when one cannot be had, the weight
// stays in ordinary memory and its blocks are copied into the pipeline's slots as before.
#pragma once

#include "npu/npu_runtime.h"
#include "workers/npu/weight_cache.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace xdna::npu {

struct resident_weight {
    npu_buffer buf;
    int64_t    rows = 0, kb = 0, panels = 0;
    size_t     elem = 2;   // bytes per weight: 2 (bf16) or 1 (int8)

    // The weights of rows [row, row + n) of K block `panel`, in place; null when they run past the buffer (the
    // caller then copies that block, padded). Views are made once and kept.
    npu_buffer * block(int64_t row, int64_t n, int64_t panel);

    // The host copy of one row's K block, for the blocks that are copied.
    const uint8_t * row_block(int64_t row, int64_t panel) const {
        return static_cast<const uint8_t *>(buf.data()) + (size_t(panel) * rows + row) * kb * elem;
    }

    // Where rows from `row` on can be written straight, row-major (a weight of one panel is laid out so); else null.
    uint8_t * rows_in_place(int64_t row) {
        return panels == 1 ? static_cast<uint8_t *>(buf.data()) + size_t(row) * kb * elem : nullptr;
    }
    // Rows [r0, r0 + n), row-major with a stride of `ld` elements, into their panels (nothing to do for rows written in
    // place), then those rows of every panel synced. Threads may store disjoint rows at once. False, with why, when
    // the sync fails.
    bool store_rows(int64_t r0, int64_t n, const uint8_t * src, int64_t ld, std::string * why);

  private:
    std::mutex mu;
    std::map<std::pair<int64_t, int64_t>, npu_buffer> views;   // by (first byte, bytes)
};

// An NPU buffer for a weight of `rows` rows of K panels of kb (`panels` of them, `elem` bytes per weight), allocated
// for kernel `k`'s B argument and followed by `tail_rows` zero rows; its rows are then written by whoever converts
// the weight (store_rows). The tail lets the last panel's last block be read in place when the weight's rows are not
// a whole number of the largest blocks (an expert of 768 rows read in blocks of 512). Null, with why, when the buffer
// cannot be had.
std::shared_ptr<resident_weight> alloc_resident(npu_runtime & rt, const npu_kernel & k, int64_t kb, int64_t rows,
                                                int64_t panels, size_t elem, int64_t tail_rows, std::string * why);

}  // namespace xdna::npu
