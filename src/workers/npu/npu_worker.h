// The NPU worker: computes a range of output rows of a claimed multiply on the NPU (through XRT, or the software
// XDNA1 where there is none), on a persistent thread of its own.
//
// Per multiply: the activations are converted to bf16 (or int8 with one scale per token) once; the worker's rows are
// tiled into the kernel's blocks (edges padded with zeros); two buffer slots, both with a run in flight, let the host
// take one block's result and fill the next block's activations while the NPU computes; partial sums over K blocks
// are added in f32 straight into the worker's rows of the result, int8 scales applied. Weights come from the
// converted-weight cache, held in NPU buffers and read in place (resident_weight.h), or are converted for the call
// when they do not fit it (then copied into the slots block by block).
//
// A failed or timed-out run, or a block with NaN/Inf in its output, fails the call: the engine recomputes the rows on
// the CPU. After repeated failures the worker switches itself off for the process.
#pragma once

#include "workers/async_worker.h"
#include "workers/npu/kernel_choice.h"
#include "workers/npu/weight_cache.h"

#include "npu/npu_runtime.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace xdna {

struct config;

class npu_worker final : public async_worker {
  public:
    // Opens the NPU runtime; null (with one log line saying why) when there is no usable NPU or kernel set.
    static std::unique_ptr<npu_worker> create(const config & cfg);
    ~npu_worker() override;

    worker_kind kind() const override { return worker_kind::npu; }
    const char * name() const override { return "npu"; }
    bool accepts(const ggml_tensor * node) const override;
    int64_t row_align(const ggml_tensor * node) const override;
    npu_cost_hint cost_hint(const ggml_tensor * node) const override;

    // What the device calls itself (the emulator says it is one).
    std::string description() const;
    bool enabled() const { return !switched_off.load(); }

    // Safe start: a small multiply on the NPU checked against an fp64 reference; false (and why) when it is wrong.
    bool self_test(std::string * why);

    // Converts a weight into the cache ahead of time (the load-time warm-up); false if it was not cached.
    bool prepare_weight(const ggml_tensor * w);
    // Loads the hardware contexts of the designs the worker uses.
    void load_designs();

    npu::weight_cache & cache() { return weights; }
    npu_runtime &  runtime() { return *rt; }

  protected:
    work_result run(const ggml_tensor * node, row_range rows) override;

  private:
    npu_worker(std::unique_ptr<npu_runtime> rt, const config & cfg);

    struct slot;
    struct job;
    const npu_design * design_for(const ggml_tensor * w) const;
    bool prepare_job(job & j, const ggml_tensor * w, int64_t expert, row_range rows, int64_t ld, std::string * err);
    void convert_activations(job & j, const float * const * src, int64_t k, int64_t ld, int64_t tb);
    work_result compute(const ggml_tensor * node, row_range rows);
    void note_failure(const std::string & why);
    void place_weight(const ggml_tensor * w, npu::converted_weight & cw);   // the cache's placer: into an NPU buffer
    void reserve_slots(const npu_kernel & kn);   // the two slots' buffers for kn's design, unless they are

    std::unique_ptr<npu_runtime> rt;
    npu::weight_cache            weights;
    npu::npu_cost_model          cost;
    bool                         w8;
    int64_t                      moe_min_tokens;   // experts with fewer routed tokens stay with the CPU
    std::unique_ptr<slot>        slots[2];
    std::vector<uint16_t>        act16_arena;   // every job's activations of a call (worker thread only)
    std::vector<int8_t>          act8_arena;
    std::vector<float>           scale_arena;

    std::atomic<bool> switched_off{ false };
    std::atomic<bool> resident_ok{ true };     // false once an NPU buffer for a weight could not be had
    int               failures_in_a_row = 0;   // worker thread only
};

}  // namespace xdna
