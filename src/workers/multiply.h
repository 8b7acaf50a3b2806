// One claimed multiply, described once where the engine receives the node and read by the planner and every worker:
// its shape (what the planner learns per), whether its weight is in the CPU's repacked layout, a MUL_MAT_ID's expert
// routing (scanned once), which experts the CPU takes whatever the split (the planner's decision), and the block the
// NPU will run with what it costs (the NPU worker's part, filled by worker::describe before the planner is asked).
#pragma once

#include "ggml.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

struct npu_kernel;

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
    double flops() const { return 2.0 * (double) k * (double) rows * (double) tokens; }   // of the whole multiply
};

struct shape_key_hash {
    size_t operator()(const shape_key & s) const;
};

shape_key shape_key_of(const ggml_tensor * node, bool repacked);

// A MUL_MAT_ID's routing: the (token, slot) pairs sent to each expert, expert by expert, in token order.
struct moe_routing {
    struct pair { int32_t token, slot; };
    std::vector<int64_t> first;   // per expert and one past the last: pairs[first[e], first[e + 1]) went to expert e
    std::vector<pair>    pairs;

    int64_t experts() const { return first.empty() ? 0 : (int64_t) first.size() - 1; }
    int64_t tokens_of(int64_t e) const { return first[e + 1] - first[e]; }
    const pair * begin_of(int64_t e) const { return pairs.data() + first[e]; }
    // Reads ids (src[2] of a MUL_MAT_ID, i32 [n_used, n_tokens]); false, and why, on an expert id out of range.
    bool read(const ggml_tensor * ids, int64_t n_experts, std::string * why);
};

// The cost structure of a multiply on the NPU, as its worker predicts it from the kernel it will run (see
// src/workers/npu/npu_cost.h): r rows take fixed_s + ceil(r / block_rows) * launches_per_block * launch_s seconds.
// The planner counts the NPU's work in those launches and corrects both terms by measurement (planner.h).
struct npu_cost_hint {
    double  fixed_s            = 0.0;   // per multiply whatever its rows (first dispatch, activation conversion)
    double  launch_s           = 0.0;   // per kernel launch: dispatch, or the block's compute if longer
    int64_t block_rows         = 0;     // weight rows per launch
    int64_t launches_per_block = 1;     // launches per block of rows: K blocks x token blocks (of every expert taken)

    bool blocks() const { return block_rows > 0 && launches_per_block > 0; }
    // the same unit of work (a launch of the same block): measurements in one unit apply to the other
    bool same_unit(const npu_cost_hint & o) const {
        return blocks() == o.blocks() && (!blocks() || (block_rows == o.block_rows && launch_s == o.launch_s));
    }
    bool operator==(const npu_cost_hint & o) const {
        return fixed_s == o.fixed_s && launch_s == o.launch_s && block_rows == o.block_rows &&
               launches_per_block == o.launches_per_block;
    }
};

// The block the NPU runs this multiply with, chosen once (npu_worker::describe) for the planner's hint and the run.
struct npu_block {
    const npu_kernel * kernel  = nullptr;   // null: the NPU does not take part
    int64_t            k_blocks = 0;        // K / the kernel's K block, rounded up
    int64_t            k_padded() const;    // that many K blocks: the converted weights' row stride
    npu_cost_hint      cost;
    bool               weights_ready = true;   // its weights are converted already: no one-time work before it starts
};

// A block of a dense multiply's activations to convert to bf16: rows [t0, t0 + rows) of src[1], columns
// [col, col + cols), written as `rows` contiguous rows of `cols` values at dst.
struct bf16_block {
    int64_t t0 = 0, rows = 0, col = 0, cols = 0;
    void *  dst = nullptr;
};

// Work the engine offers a device worker on the CPU worker's threads, on the calling thread, before the device starts
// (those threads are about to compute the CPU's rows, or idle while the device computes everything): converting
// activations to bf16, which one host thread would otherwise do while the device waits, then then(ith, nth) on every
// thread (the device's sync of what they wrote; may be empty). False: not done.
using bf16_converter = std::function<bool(const std::vector<bf16_block> &, const std::function<void(int ith, int nth)> & then)>;
// Runs fn(ith, nth) for ith = 0..nth-1 on the CPU worker's threads, on the calling thread, before the devices start;
// false: not run. For a device worker's one-time work that one host thread would do on the multiply's path (the
// NPU's first use of a weight: its conversion).
using cpu_parallel = std::function<bool(const std::function<void(int ith, int nth)> &)>;

struct multiply {
    const ggml_tensor * node     = nullptr;
    shape_key           key;
    bool                repacked = false;   // the weight is in the CPU's repacked layout (8-row groups)
    moe_routing         routing;            // MUL_MAT_ID only
    std::string         routing_error;      // non-empty: the routing could not be read (the CPU backend computes it)
    // MUL_MAT_ID: per expert, whether the CPU computes all its rows whatever the split (too few routed tokens to
    // be worth the NPU's launches): the planner's decision (split_planner::assign_experts), empty until then
    std::vector<uint8_t> cpu_expert;
    npu_block           npu;
    bf16_converter      convert_bf16;       // empty: not offered (a worker on its own converts on its own thread)
    cpu_parallel        on_cpu_threads;     // empty: not offered

    bool is_id() const { return node->op == GGML_OP_MUL_MAT_ID; }
    bool on_cpu(int64_t expert) const { return !cpu_expert.empty() && cpu_expert[expert]; }
    bool any_on_cpu() const;
};

// The description of `node` (a claimed MUL_MAT or MUL_MAT_ID): its key, layout and routing.
multiply describe_multiply(const ggml_tensor * node);

}  // namespace xdna
