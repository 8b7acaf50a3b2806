// The split planner owns every decision about which worker computes which output rows of a multiply.
// Workers only execute a row range and report how long it took; the planner learns from those reports.
//
// Rows are laid out NPU first, then GPU, then CPU: [0, npu) [npu, npu+gpu) [npu+gpu, n). The NPU gets whole
// `npu_step`-row steps (possibly none); every worker's boundary respects its row alignment.
#pragma once

#include "workers/worker.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace xdna {

// What the planner learns per: one matrix shape and weight type.
struct shape_key {
    int     op       = 0;   // ggml_op
    int     type     = 0;   // ggml_type of the weight
    int64_t k        = 0;   // inputs
    int64_t rows     = 0;   // output rows (per expert)
    int64_t tokens   = 0;   // tokens (columns of the activations)
    int64_t experts  = 1;   // MUL_MAT_ID: experts in the weight
    bool    repacked = false;

    bool operator==(const shape_key & o) const {
        return op == o.op && type == o.type && k == o.k && rows == o.rows && tokens == o.tokens &&
               experts == o.experts && repacked == o.repacked;
    }
    std::string str() const;
};

struct shape_key_hash {
    size_t operator()(const shape_key & s) const;
};

shape_key shape_key_of(const ggml_tensor * node, bool repacked);

// A worker as the planner sees it for one multiply.
struct plan_worker {
    worker_kind kind;
    int64_t     align = 1;   // row alignment it needs for this multiply
};

struct planner_options {
    double  npu_share = -1.0;   // 0..1 fixed share of the rows for the NPU; < 0: auto
    int64_t npu_step  = 256;    // the NPU gets whole steps of this many rows
    int     reprobe_every = 16; // a shape the NPU dropped out of gets one step again every this many multiplies
};

class split_planner {
  public:
    explicit split_planner(planner_options opts = {});

    // Row ranges for `workers` (same order) of a multiply with `n_rows` output rows. Every row goes to exactly one
    // worker. Deterministic given the options and the reports so far.
    std::vector<row_range> plan(const shape_key & key, int64_t n_rows, const std::vector<plan_worker> & workers);

    // A worker finished `rows` rows of `key` in `seconds` (ok == false: it failed and the rows were redone elsewhere).
    void report(const shape_key & key, worker_kind kind, int64_t rows, double seconds, bool ok = true);

    const planner_options & options() const { return opts; }

  private:
    struct speed {              // learned cost of one worker on one shape
        double  sec_per_row = 0.0;
        int64_t samples     = 0;
    };
    struct shape_state {
        speed   w[3];           // indexed by worker_kind
        int64_t calls          = 0;
        int64_t npu_skipped    = 0;   // multiplies since the NPU last took rows
        std::string last_plan;        // for logging decisions when they change
    };

    planner_options opts;
    mutable std::mutex mtx;
    std::unordered_map<shape_key, shape_state, shape_key_hash> shapes;
};

}  // namespace xdna
