// One claimed multiply, described once where the engine receives the node and read by the planner and every worker:
// its shape (what the planner learns per), whether its weight is in the CPU's repacked layout, a MUL_MAT_ID's expert
// routing (scanned once), which experts the CPU takes whatever the split (the planner's decision), and what a device
// worker's rows cost in launches (launch_cost: the NPU worker's part, filled by worker::describe before the planner is
// asked). The planner sees the devices only through this description: no device's own types.
#pragma once

#include "ggml.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

namespace npu { struct npu_tiling; }

// What the planner learns per: one matrix shape and weight type.
struct shape_key {
    int     op       = 0;   // ggml_op
    int     type     = 0;   // ggml_type of the weight
    int64_t k        = 0;   // inputs
    int64_t rows     = 0;   // output rows (per expert)
    int64_t tokens   = 0;   // tokens (columns of the activations)
    int64_t experts  = 1;   // MUL_MAT_ID: experts in the weight
    bool    repacked = false;
    int     nodes    = 1;   // 2: a pair of multiplies with one input (multiply::twin), rows of both at once
    // A device worker converts the weight on every call (the NPU, past its cache's budget): its rows cost it the
    // conversion each time, another cost than the same shape's weights kept converted (set by the engine once the
    // workers have described their part, so that the planner learns the two apart)
    bool    per_call = false;
    // Begun ahead of its turn (multiply::ahead): the NPU's part then costs the multiply only what is left of it at its
    // turn, another cost than the same shape's at its turn (set by the engine, so that the planner learns the two apart)
    bool    ahead = false;

    bool operator==(const shape_key & o) const {
        return op == o.op && type == o.type && k == o.k && rows == o.rows && tokens == o.tokens &&
               experts == o.experts && repacked == o.repacked && nodes == o.nodes && per_call == o.per_call &&
               ahead == o.ahead;
    }
    std::string str() const;
    double flops() const { return 2.0 * (double) k * (double) rows * (double) tokens * (double) nodes; }   // all of it
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

// The cost structure of a multiply on the NPU, as its worker predicts it from the blocks it will run (see
// src/workers/npu/kernel_choice.h): r rows are run in the blocks for_blocks() lists, each launched
// launches_per_block times (K blocks x token blocks), and take fixed_s + units(r) * launch_s seconds. The planner
// counts the NPU's work in those units and corrects both terms by measurement (planner.h).
struct launch_cost {
    static constexpr int max_wide = 3;
    double  fixed_s            = 0.0;   // per multiply whatever its rows (first dispatch, activation conversion)
    double  launch_s           = 0.0;   // per launch of a block_rows block: the queued gap, then its compute
    int64_t block_rows         = 0;     // the narrowest block's rows: the NPU's rows come in whole such blocks
    int64_t launches_per_block = 1;     // launches per block of rows: K blocks x token blocks (of every expert taken)
    // Wider blocks the worker runs where the rows fill them, widest first (0: none), and each one's launch in
    // launch_s: one launch of 1,024 rows instead of two of 512 saves a queued gap (35 us) and a result's set-up.
    int64_t wide_rows[max_wide]  = {};
    double  wide_units[max_wide] = {};
    // The multiply's rows, where the NPU worker takes the result of its last run alone when it has only a part of them
    // (the CPU's threads still on their own rows; 0: it never does). A part then ends in narrower blocks: the last
    // result is all the host work left once the NPU is done. Measured (-t 8 of 16 cores, emulated at 1,441 GFLOP/s,
    // 2,048 rows of 3,072 in two 1,024-row blocks): that result took its thread 510-610 us, a 256-row one 27-35 us.
    int64_t part_of = 0;

    bool blocks() const { return block_rows > 0 && launches_per_block > 0; }
    // The blocks `rows` rows run in: whole blocks of the widest size that fits, widest first; then the rest (fewer
    // rows than any wider block) in blocks of the one size that costs it least, the last one padded with zero rows
    // (264 rows: one 512-row block rather than two of 256). f(block's rows, its units) per block, in that order.
    // Of a part (part_of), a last block that rows fill and that is wider than the narrowest is cut in halves, down to
    // two of the narrowest (1,024 rows: 512, 256, 256), where those widths are run: two more queued gaps (70 us) for
    // a last result a quarter as long.
    template <class F> void for_blocks(int64_t rows, F && f) const {
        if (!blocks()) return;
        const bool part = part_of > 0 && rows < part_of;
        int64_t held = 0;        // the last block so far, passed on once another follows
        double  held_units = 0.0;
        auto put = [&](int64_t r, double u) {
            if (held > 0) f(held, held_units);
            held = r;
            held_units = u;
        };
        int64_t size = block_rows;
        double  units = 1.0;
        for (int i = 0; i < max_wide && wide_rows[i] > 0; ++i) {
            for (; rows >= wide_rows[i]; rows -= wide_rows[i]) put(wide_rows[i], wide_units[i]);
        }
        for (int i = 0; i < max_wide && wide_rows[i] > 0; ++i) {
            const double u = (double) ((rows + wide_rows[i] - 1) / wide_rows[i]) * wide_units[i];
            if (u < (double) ((rows + size - 1) / size) * units) { size = wide_rows[i]; units = wide_units[i]; }
        }
        const bool filled = rows == 0;   // no rest: the last block is full
        for (; rows > 0; rows -= size) put(size, units);
        for (double half_units; part && filled && held > block_rows && units_of(held / 2, &half_units);) {
            f(held / 2, half_units);
            held /= 2;
            held_units = half_units;
        }
        if (held > 0) f(held, held_units);
    }
    // a block of `r` rows in launches of the narrowest: false where no block of that width is run
    bool units_of(int64_t r, double * u) const {
        if (r == block_rows) { *u = 1.0; return true; }
        for (int i = 0; i < max_wide && wide_rows[i] > 0; ++i) {
            if (wide_rows[i] == r) { *u = wide_units[i]; return true; }
        }
        return false;
    }
    // the launches of `rows` rows, in launches of a block_rows block
    double units(int64_t rows) const {
        double u = 0.0;
        for_blocks(rows, [&u](int64_t, double x) { u += x; });
        return u * (double) launches_per_block;
    }
    // the same unit of work (a launch of the same blocks): measurements in one unit apply to the other
    bool same_unit(const launch_cost & o) const {
        return blocks() == o.blocks() && (!blocks() || (block_rows == o.block_rows && launch_s == o.launch_s &&
                                                        part_of == o.part_of && same_wide(o)));
    }
    bool same_wide(const launch_cost & o) const {
        for (int i = 0; i < max_wide; ++i) {
            if (wide_rows[i] != o.wide_rows[i] || wide_units[i] != o.wide_units[i]) return false;
        }
        return true;
    }
    bool operator==(const launch_cost & o) const {
        return fixed_s == o.fixed_s && launch_s == o.launch_s && block_rows == o.block_rows &&
               launches_per_block == o.launches_per_block && part_of == o.part_of && same_wide(o);
    }
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
    // A second MUL_MAT of the same input and a weight of the same type, shape and layout, computed with it (K and V,
    // gate and up: consecutive in llama.cpp's graphs): a range of rows is that range of both results, so each worker
    // runs both from one plan, and the NPU keeps one stream of launches instead of starting a second (can_pair).
    const ggml_tensor * twin     = nullptr;
    shape_key           key;
    bool                repacked = false;   // the weight is in the CPU's repacked layout (8-row groups)
    moe_routing         routing;            // MUL_MAT_ID only
    std::string         routing_error;      // non-empty: the routing could not be read (the CPU backend computes it)
    // MUL_MAT_ID: per expert, whether the CPU computes all its rows whatever the split (too few routed tokens to
    // be worth the NPU's launches): the planner's decision (split_planner::assign_experts), empty until then
    std::vector<uint8_t> cpu_expert;
    // The NPU worker's part (npu_worker::describe; the planner reads its cost, not the rest): what its rows cost in
    // launches, whether its weights are converted already (no one-time work before it starts), and the blocks it
    // chose (kernel_choice.h; null: the NPU does not take part)
    launch_cost         npu_cost;
    bool                npu_weights_ready = true;
    bool                npu_weights_per_call = false;   // past the NPU's cache: converted on every call
    std::shared_ptr<const npu::npu_tiling> npu_choice;
    bf16_converter      convert_bf16;       // empty: not offered (a worker on its own converts on its own thread)
    // Begun ahead of its turn (compute_engine::run_ahead: at the end of an earlier multiply of the same input, while
    // the CPU computes what lies between): its result tensors may hold other data until then, so a device worker
    // keeps its results until worker::release() says they may go in.
    bool                ahead = false;
    cpu_parallel        on_cpu_threads;     // empty: not offered

    bool is_id() const { return node->op == GGML_OP_MUL_MAT_ID; }
    // the multiply's nodes: node, then the twin if there is one
    int nodes() const { return twin ? 2 : 1; }
    const ggml_tensor * node_at(int i) const { return i == 0 ? node : twin; }
    bool on_cpu(int64_t expert) const { return !cpu_expert.empty() && cpu_expert[expert]; }
    bool any_on_cpu() const;
};

// The description of `node` (a claimed MUL_MAT or MUL_MAT_ID): its key, layout and routing; with `twin`
// (can_pair(node, twin) true), of both.
multiply describe_multiply(const ggml_tensor * node, const ggml_tensor * twin = nullptr);

// Whether MUL_MATs a and b can be computed as one multiply (multiply::twin): the same input (the same tensor, or the
// same data and layout), weights of the same type, shape and layout (both repacked or neither), results of the same
// shape, the same precision requests (op_params), and b not reading a's result.
bool can_pair(const ggml_tensor * a, const ggml_tensor * b);

}  // namespace xdna
