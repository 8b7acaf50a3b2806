// The NPU worker's pipeline at work (see npu_pipeline.h): the activations converted into the arena, each slot filled
// with its block's activations and weights, launches queued behind each other, and each result taken into the result
// rows while the NPU computes the next, on the worker's thread and the threads lent to it.
#include "workers/npu/npu_worker.h"
#include "workers/npu/npu_pipeline.h"

#include "workers/npu/resident_weight.h"

#include "convert/xdna_convert.h"
#include "util/clock.h"
#include "util/trace.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace xdna {

using namespace npu;

// On the caller's thread, the worker idle: the CPU worker's threads convert a dense multiply's activations straight
// into the arena, in the layout the run reads (block (token block tbi, K block kbi) at place tbi * k_blocks + kbi, as
// place_activations numbers them; rows of kb values), and the run then finds them held, as it finds those of an
// earlier multiply with the same input. One thread converting 512 tokens x 1,024 inputs takes ~0.5 ms while the NPU
// waits for its first block; eight take a fraction of that, before the NPU starts. They sync them too. Only bf16
// (int8 activations carry a scale per token), a K that is a whole number of K blocks (no zero columns to add) and an
// arena that holds every block; otherwise the run converts them itself, block by block.
void npu_worker::before_start(const multiply & m, row_range rows) {
    if (m.ahead) {
        std::lock_guard<std::mutex> lock(release_mu);   // the worker's thread waits for this call's release()
        release_word.store(0, std::memory_order_relaxed);
    }
    helper.open();   // the caller may lend its thread once its own rows are done (help())
    wake_spares();   // and threads of the worker's own serve it from now on, where cores are idle
    if (!m.npu_choice || rows.empty() || switched_off) return;
    if (m.on_cpu_threads) convert_weights_on_cpu(m);
    if (w8 || m.is_id() || !m.convert_bf16) return;
    const npu_kernel & kn = *m.npu_choice->kernel;
    const ggml_tensor * x = m.node->src[1];
    const int64_t k = x->ne[0], tokens = x->ne[1], tb = kn.tokens, kb = kn.k;
    if (k % kb != 0 || x->nb[0] != sizeof(float) || x->ne[2] * x->ne[3] != 1) return;
    const int64_t k_blocks = k / kb, a_blocks = (tokens + tb - 1) / tb * k_blocks;
    const size_t block_bytes = size_t(tb) * kb * sizeof(ggml_bf16_t), bytes = size_t(a_blocks) * block_bytes;
    const arena_key key = input_key(x, tb, kb, m.npu_choice->k_padded, a_blocks);
    if (key == arena_holds && arena_k_held >= k_blocks && act_arena.size() >= bytes) return;   // held (gate after up)
    if (bytes > arena_cap || !reserve_arena(kn, bytes)) return;
    arena_holds = arena_key();   // until the new contents are complete
    // Where the worker's thread goes on by itself (not driven), only the first K block of each token block: the first
    // launch reads no more, and the worker converts the others, on the threads lent to it, while that launch is
    // dispatched (150 us), instead of the NPU waiting for all of them (K = 3,072, -t 8 on 16 vCPUs: ~170 us).
    const int64_t k_first = is_driven() ? k_blocks : 1;
    std::vector<bf16_block> blocks;
    uint8_t * base = act_arena.as<uint8_t>();
    for (int64_t tbi = 0; tbi * tb < tokens; ++tbi) {
        for (int64_t kbi = 0; kbi < k_first; ++kbi) {
            const size_t a = size_t(tbi * k_blocks + kbi);   // its place (place_activations)
            blocks.push_back({ tbi * tb, std::min(tb, tokens - tbi * tb), kbi * kb, kb, base + a * block_bytes });
        }
    }
    // and each thread syncs a slice of each to the NPU: one thread takes ~95 us for a 512 x 1,024 block (-t 8, 16
    // cores), before the first launch; where a sync fails, the worker's thread syncs each block again before its launch
    std::atomic<bool> synced{ true };
    const std::function<void(int, int)> sync_slice = [&](int ith, int nth) {
        const size_t page = 4096, pages = (block_bytes + page - 1) / page;
        const size_t from = std::min(block_bytes, pages * ith / nth * page);
        const size_t to   = std::min(block_bytes, pages * (ith + 1) / nth * page);
        try {
            for (const bf16_block & b : blocks) {
                if (to > from) act_arena.sync_to_device(to - from, size_t((uint8_t *) b.dst - base) + from);
            }
        } catch (const std::exception &) {
            synced.store(false, std::memory_order_relaxed);
        }
    };
    trace::scope ts("convert activations (CPU threads)", tokens);
    if (!m.convert_bf16(blocks, sync_slice)) return;
    arena_holds  = key;
    arena_k_held = k_first;
    staged_unsynced = !synced.load(std::memory_order_relaxed);   // then synced on the worker's thread, block by block
}

// Every launch of the call, in order: job, token block, K block, row block (fastest); a pair's two jobs, which read
// the same activations, as one, the second's row blocks after the first's for each block of activations. Consecutive
// launches then share their activations, and the partial sums over K go straight into the result rows, the first K
// block writing them and the others adding, in K order. Each activation block gets its place in the arena; it is
// converted when the first launch that reads it is prepared.
void npu_worker::place_activations(call & c) {
    int64_t a_blocks = 0;
    const int64_t n_jobs = (int64_t) c.jobs.size(), group = c.m->is_id() ? 1 : n_jobs;   // jobs of one input
    for (int64_t j0 = 0; j0 < n_jobs; j0 += group) {
        const int64_t token_blocks = (c.jobs[j0].n_tokens + c.tb - 1) / c.tb;
        for (int64_t tbi = 0; tbi < token_blocks; ++tbi) {
            for (int64_t kbi = 0; kbi < c.k_blocks; ++kbi, ++a_blocks) {
                for (int64_t ji = j0; ji < j0 + group; ++ji) {
                    for (int64_t rbi = 0; rbi < (int64_t) c.row_blocks.size(); ++rbi) {
                        c.launches.push_back({ ji, tbi, rbi, kbi, a_blocks });
                    }
                }
            }
        }
    }
    const size_t block_bytes = size_t(c.tb) * c.kb * c.a_elem;
    // a dense multiply whose input the arena already holds (gate after up): nothing to convert
    const arena_key key = c.m->is_id() ? arena_key() : input_key(c.m->node->src[1], c.tb, c.kb, c.ld, a_blocks);
    const bool held = key.data && key == arena_holds && act_arena.size() >= size_t(a_blocks) * block_bytes;
    const int64_t k_held = arena_k_held;   // of each token block, its first K blocks (before_start's)
    arena_holds = arena_key();   // until the new contents are complete
    // room for every block, up to `arena_cap` of pinned memory (a mixture of experts' call has hundreds of blocks):
    // past that, or where the locked-memory limit refuses more, the places are reused in turn
    const size_t want = std::max(size_t(depth) * block_bytes, std::min(size_t(a_blocks) * block_bytes, arena_cap));
    if (!reserve_arena(*c.kn, want) && act_arena.size() < size_t(min_depth) * block_bytes) {
        throw npu_error(npu_errc::buffer, "no NPU buffer for the activations (locked-memory limit?)");
    }
    c.places = std::min<int64_t>(a_blocks, int64_t(act_arena.size() / block_bytes));
    // places reused in turn: a run in flight per place at most, so that none is overwritten while a run reads it
    c.depth = c.places < a_blocks ? std::min<int64_t>(depth, c.places) : depth;
    if (w8 && act_scales.size() < size_t(a_blocks * c.tb)) act_scales.resize(size_t(a_blocks * c.tb));
    c.a_views.clear();
    for (int64_t p = 0; p < c.places; ++p) c.a_views.push_back(act_arena.view(size_t(p) * block_bytes, block_bytes));
    c.a_held.assign(c.places, -1);
    const bool staged = staged_unsynced;
    staged_unsynced = false;
    if (held && c.places == a_blocks) {
        if (staged) c.a_unsynced.assign(c.places, 0);
        for (int64_t p = 0; p < c.places; ++p) {
            if (p % c.k_blocks >= k_held) continue;   // block p is (token block p / k_blocks, K block p % k_blocks)
            c.a_held[p] = p;
            if (staged) c.a_unsynced[p] = 1;
        }
    }
    c.arena_key_after = key;
}

// The activation block `bl` reads: the real tokens of its token block, its K block of each (columns past K zero),
// straight into its place in the arena, then synced. The rows past the real tokens give result rows nobody reads.
// In parts of 64 tokens or more, on the threads lent to the worker where there are any.
void npu_worker::convert_block(call & c, const launch & bl) {
    const job & j = c.jobs[bl.job];
    const int64_t t0 = bl.tbi * c.tb, n = std::min(c.tb, j.n_tokens - t0);
    const int64_t col = bl.kbi * c.kb, cols = std::min(c.kb, c.k - col);
    trace::scope ts("convert activations", n);
    c.src_rows.resize(n);
    for (int64_t t = 0; t < n; ++t) c.src_rows[t] = j.src[t0 + t] + col;
    const int64_t place = bl.a_block % c.places;
    npu_buffer & a = c.a_views[place];
    const size_t row_bytes = size_t(c.kb) * c.a_elem;
    on_lent_threads(n, std::clamp<int64_t>(n / 64, 1, 8), [&](int64_t, int64_t p0, int64_t p1) {
        const float * const * src = c.src_rows.data() + p0;
        if (w8) {
            xdna_act_rows_to_int8(src, p1 - p0, cols, a.as<int8_t>() + p0 * c.kb, c.kb,
                                  &act_scales[size_t(bl.a_block * c.tb + p0)]);
        } else {
            xdna_act_rows_to_bf16(src, p1 - p0, cols, a.as<ggml_bf16_t>() + p0 * c.kb, c.kb);
        }
        a.sync_to_device(size_t(p1 - p0) * row_bytes, size_t(p0) * row_bytes);
    });
    c.a_held[place] = bl.a_block;
}

// Slot `s` for launch i: its activations (converted first if no launch read them yet) and its weights, in place where
// the weight is resident (a view of its buffer, synced when it was made); otherwise, or where the block runs past
// that buffer, copied into the slot with zeros past the last row.
void npu_worker::fill_slot(call & c, slot & s, int64_t i) {
    const launch & bl = c.launches[i];
    const int64_t place = bl.a_block % c.places;
    if (c.a_held[place] != bl.a_block) convert_block(c, bl);
    if (!c.a_unsynced.empty() && c.a_unsynced[place]) {
        trace::scope ts("sync activations");
        c.a_views[place].sync_to_device();
        c.a_unsynced[place] = 0;
    }
    const job & j = c.jobs[bl.job];
    const row_block & rb = c.row_blocks[bl.rbi];
    resident_weight * res = j.weight->resident.get();
    s.b_arg = res ? res->block(j.w_base + rb.row0, rb.kn->rows, bl.kbi) : nullptr;
    if (s.b_arg) return;
    trace::scope ts("copy weights", rb.kn->rows);
    const size_t row_bytes = size_t(c.kb) * c.a_elem;
    uint8_t * b = (uint8_t *) s.b.data();
    const uint8_t * wt = w8 ? (const uint8_t *) j.weight->i8.data() : (const uint8_t *) j.weight->bf16.data();
    for (int64_t r = 0; r < rb.kn->rows; ++r) {
        const int64_t row = rb.row0 + r;   // relative to rows.begin
        uint8_t * dst = b + size_t(r) * row_bytes;
        if (c.rows.begin + row < c.rows.end) {
            const uint8_t * src = res ? res->row_block(j.w_base + row, bl.kbi)
                                      : wt + (size_t(j.w_base + row) * c.ld + bl.kbi * c.kb) * c.a_elem;
            memcpy(dst, src, row_bytes);
        } else {
            memset(dst, 0, row_bytes);
        }
    }
    s.b.sync_to_device(size_t(rb.kn->rows) * row_bytes);
    s.b_arg = &s.b;
}

// NaN or Inf among n floats (the exponent all ones), in a loop the compiler vectorizes
static bool all_finite(const float * v, int64_t n) {
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof(u));
        bad |= uint32_t((u & 0x7f800000u) == 0x7f800000u);
    }
    return bad == 0;
}

// Launch i's result, its real tokens and rows, into the result: written by the first K block, added by the others.
// Split by tokens over the lent threads where there are any (help()): a 512x512 block is ~1 MiB to sync and copy,
// ~100 us on two threads, and the last block's comes after the NPU's part, on the multiply's path (at share 1, -t 8,
// 3,140 GFLOP/s: ~100 us of ~1.6 ms per multiply). Parts of 32 tokens at least.
void npu_worker::take_result(call & c, slot & s, int64_t i) {
    const launch & bl = c.launches[i];
    const int64_t t_end = std::min(c.tb, c.jobs[bl.job].n_tokens - bl.tbi * c.tb);
    trace::scope ts("take result", t_end);
    const int64_t parts = std::min<int64_t>(helper.present() + 1, std::max<int64_t>(1, t_end / 32));
    std::vector<uint8_t> finite(parts, 1);
    on_lent_threads(t_end, parts, [&](int64_t p, int64_t t0, int64_t t1) { finite[p] = take_tokens(c, s, i, t0, t1); });
    c.finite = c.finite && std::all_of(finite.begin(), finite.end(), [](uint8_t f) { return f != 0; });
}

// Tokens [t_begin, t_end) of launch i's result: synced from the device, checked, written or added into the result.
// False: a value the run cannot have produced (NaN or Inf; for int8, beyond what int8 products can sum to).
bool npu_worker::take_tokens(call & c, slot & s, int64_t i, int64_t t_begin, int64_t t_end) {
    if (t_begin >= t_end) return true;
    const launch & bl = c.launches[i];
    const job & j = c.jobs[bl.job];
    const row_block & rb = c.row_blocks[bl.rbi];
    const int64_t width = rb.kn->rows;   // the result's row stride: the block's rows
    const int64_t r_end = std::min(width, c.rows.end - (c.rows.begin + rb.row0));
    const int64_t col = c.rows.begin + rb.row0;
    const size_t elem = w8 ? sizeof(int32_t) : sizeof(float);
    s.c.sync_from_device(size_t(t_end - t_begin) * width * elem, size_t(t_begin) * width * elem);
    const bool first = bl.kbi == 0;
    bool finite = true;
    if (w8) {
        const int32_t * ci = s.c.as<int32_t>();
        // int8 x int8 over kb inputs cannot exceed 127 * 127 * kb: anything beyond is a broken run
        const int64_t bound = int64_t(127) * 127 * c.kb;
        const float * ws = &j.weight->scales[size_t(j.w_base + rb.row0) * j.weight->groups + bl.kbi];
        const size_t ws_step = j.weight->groups;
        const float * as = &act_scales[size_t(bl.a_block * c.tb)];
        for (int64_t t = t_begin; t < t_end; ++t) {
            const int32_t * ct = ci + t * width;
            float * out = (float *) j.out[bl.tbi * c.tb + t] + col;
            for (int64_t r = 0; c.check_finite && r < r_end; ++r) finite = finite && std::llabs((long long) ct[r]) <= bound;
            for (int64_t r = 0; r < r_end; ++r) {
                const float v = (float) ct[r] * as[t] * ws[r * ws_step];
                out[r] = first ? v : out[r] + v;
            }
        }
        return finite;
    }
    const float * cf = s.c.as<float>();
    for (int64_t t = t_begin; t < t_end; ++t) {
        const float * ct = cf + t * width;
        float * out = (float *) j.out[bl.tbi * c.tb + t] + col;
        if (c.check_finite) finite = all_finite(ct, r_end) && finite;
        if (first) {
            memcpy(out, ct, r_end * sizeof(float));
        } else {
            for (int64_t r = 0; r < r_end; ++r) out[r] += ct[r];
        }
    }
    return finite;
}

// The pipeline: a run in flight per slot. While the NPU computes the next launches (queued behind each other, so it
// pays the short queued gap instead of a fresh dispatch), the host takes launch i's result out of its slot and
// prepares launch i + depth there. A slot's buffers are touched only once its run has been waited for. It goes on from
// where it stands (c.launched, c.taken): a driven call (begin_driven) has made progress before.
void npu_worker::run_pipeline(call & c) {
    const int64_t n = (int64_t) c.launches.size();
    launch_first(c);
    try {
        while (c.taken < n) {
            slot & cur = *slots[c.taken % c.depth];
            {
                trace::scope ts("wait");
                rt->wait(cur.run);   // leaves the run inactive, done or failed
            }
            if (c.taken == n - 1) c.last_waited = now_seconds();
            take_result(c, cur, c.taken);
            c.taken++;
            // begun ahead and its turn come: the rest goes straight into the result
            if (c.m->ahead && !c.delivered && release_word.load(std::memory_order_acquire) == 1) deliver_kept(c);
            if (c.launched < n) launch_next(c);
        }
    } catch (...) {
        drain();
        throw;
    }
}

// Launch c.launched, into the slot its result will be taken from (launch i + depth reuses launch i's).
void npu_worker::launch_next(call & c) {
    const int64_t i = c.launched;
    slot & s = *slots[i % c.depth];
    fill_slot(c, s, i);
    trace::scope ts("launch");
    const npu_kernel & kn = *c.row_blocks[c.launches[i].rbi].kn;
    s.run = rt->launch(kn, c.a_views[c.launches[i].a_block % c.places], *s.b_arg, s.c);
    held_design.store(kn.design, std::memory_order_relaxed);
    if (i == 0) c.first_launched = now_seconds();
    c.launched++;
}

}  // namespace xdna
