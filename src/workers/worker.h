// A worker computes a range of output rows of a claimed multiply and reports how long it took.
// The split planner decides who does which rows; workers only execute. Every worker writes straight into its own rows
// of the same result tensor, so nothing is merged afterwards.
#pragma once

#include "ggml.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Output rows [begin, end) of a multiply (for MUL_MAT_ID: the same rows of every expert).
struct row_range {
    int64_t begin = 0;
    int64_t end   = 0;

    int64_t size() const { return end - begin; }
    bool empty() const { return end <= begin; }
};

enum class worker_kind { npu, gpu, cpu };

const char * worker_kind_name(worker_kind kind);

// A count of the graphs (splits) the backend has been handed, process-wide. While one graph runs, a tensor at one
// address with one shape keeps its contents (ggml's allocator reuses memory only between graphs or after a tensor's
// last use), so a worker may keep what it derived from an input, e.g. the converted activations shared by the q, k
// and v multiplies, for the rest of the graph. next_graph() is called when a graph arrives.
uint64_t graph_epoch();
void     next_graph();

struct work_result {
    bool        ok      = true;
    double      seconds = 0.0;   // wall time of the worker's own part
    std::string error;           // why it failed (ok == false); the caller recomputes the rows on the CPU
    // the part of `seconds` that does not grow with the rows (the NPU: its set-up before the first launch and its
    // last result after the last run), measured apart so that the planner need not guess it; < 0: not measured
    double      fixed_seconds = -1.0;
    // the part of `seconds` spent on work done once for good (converting a weight into the NPU's cache): a cost of
    // the first use, not of the multiply, which the planner must not learn from
    double      once_seconds = 0.0;
    // MUL_MAT_ID: experts whose rows this worker left (too few routed tokens to be worth it); the caller computes
    // the same rows of these experts on the CPU
    std::vector<int32_t> experts_left{};
};

// What a device worker tells the planner about its cost on one multiply, beyond what the planner measures: the NPU's
// time grows in whole launches, so the planner models it per launch (see src/planner/planner.h).
struct npu_cost_hint {
    double  fixed_s            = 0.0;   // per multiply whatever its rows (first dispatch, activation conversion)
    double  launch_s           = 0.0;   // per kernel launch: dispatch, or the block's compute if longer
    int64_t block_rows         = 0;     // weight rows per launch
    int64_t launches_per_block = 1;     // launches per block of rows: ceil(K / block K) * ceil(tokens / block tokens)

    bool blocks() const { return block_rows > 0 && launches_per_block > 0; }
    bool operator==(const npu_cost_hint & o) const {
        return fixed_s == o.fixed_s && launch_s == o.launch_s && block_rows == o.block_rows &&
               launches_per_block == o.launches_per_block;
    }
};

class worker {
  public:
    virtual ~worker() = default;

    virtual worker_kind kind() const = 0;
    virtual const char * name() const = 0;

    // Whether this worker can take rows of `node` at all (a GPU cannot read the CPU's repacked weights, say).
    virtual bool accepts(const ggml_tensor * node) const = 0;

    // Row granularity the worker needs for `node`: its ranges start and end on multiples of this (or at the end).
    virtual int64_t row_align(const ggml_tensor * node) const = 0;

    // Starts computing `rows` of `node`. Workers with a device of their own return at once; the CPU worker computes
    // here, on the calling thread. Each begin() is followed by exactly one end().
    virtual void begin(const ggml_tensor * node, row_range rows) = 0;

    // Waits for the work started by begin().
    virtual work_result end() = 0;

    // The cost structure of `node` on this worker, if it has one to tell (the NPU); the same for every multiply of
    // one shape.
    virtual npu_cost_hint cost_hint(const ggml_tensor * node) const { (void) node; return {}; }

    // Seconds its device has been busy with work so far in this process (the NPU's runs), < 0 when not known.
    virtual double device_busy_seconds() const { return -1.0; }
};

}  // namespace xdna
