// The CPU worker's tiles: a dense multiply's rows computed a block of tokens at a time, every thread of its team
// through a one-thread CPU backend of its own (a lane) that computes all of the rows for its block.
//
// Why: ggml's MUL_MAT on repacked weights (ggml-cpu/repack.cpp, forward_mul_mat, in the llama.cpp releases this
// project builds against) hands each thread chunks of about rows / (4 x threads) rows, at least 8, and its x86 kernels
// take 16 rows at a time with AVX-512 and leave the rest of a chunk to their 8-row AVX2 code (arch/x86/repack.cpp:
// `anc = nc - nc % 16`). The CPU alone gets whole weights, 16 rows a chunk and more at -t 16; the CPU's part of a
// split is a fraction of them: at -t 16, 256 of K's 1,024 rows are 32 chunks of 8, every row on the 8-row code. That
// fits what the 16-core host (Intel Xeon, AVX-512) measured: the CPU's rows in such splits at 1.5-1.9x their time
// alone by the planner's models, 1.9-2.1x for K and V, O and down in the timeline of share 0.75, where the 2-CPU VM
// (AMD EPYC, no AVX-512: one code for every chunk) puts the two 4-8% apart (docs/results.md's history). A lane
// computes its rows as one chunk, however few. Measured on that host since: the CPU worker alone 1.06-1.55x faster
// in tiles where ggml's chunks are narrow (a 256-row part at -t 16: 333 us against 517), 2-16% slower where they are
// not (a tile reads all of the part's rows for its tokens); beside the team-driven NPU at -t 16, share 0.75, no
// faster (0.957), at -t 8 1.13x. So they are off by default (GGML_XDNA_CPU_TILES).
#pragma once

#include "workers/multiply.h"
#include "workers/worker.h"

#include "ggml-backend.h"

#include <atomic>
#include <memory>
#include <vector>

namespace xdna {

// How many of `rows` ggml's MUL_MAT on repacked weights computes with its 8-row code on `threads` threads: the rows
// of its chunks beyond their whole 16-row groups (ggml's chunking, repack.cpp; 0 where every chunk is 16-row groups).
int64_t cpu_tiles_narrow_rows(int64_t rows, int threads);

class cpu_tiles;

// One node of the team's graph: `rows` of every node of `m`, for `tokens`, in tiles handed out to its threads as
// they come for them (a lane's tile: a block of 16 to 64 tokens, all of the rows or a block of whole 16-row groups).
struct cpu_tiles_job {
    cpu_tiles *      tiles = nullptr;
    const multiply * m     = nullptr;
    row_range        rows, tokens;
    int64_t          row_block = 0, token_block = 0;
    int64_t          row_blocks = 0, count = 0;
    std::atomic<int64_t> next{ 0 };
    std::atomic<int>     status{ GGML_STATUS_SUCCESS };   // the first tile's failure; the others are not started
    std::atomic<int>     go{ 0 }, done{ 0 };              // what the caller wrote, published to the team, and back
};

class cpu_tiles {
  public:
    explicit cpu_tiles(ggml_backend_dev_t cpu_dev);
    ~cpu_tiles();

    // A lane for each of `threads` threads (made the first time so many are asked for); false, with one log line the
    // first time, where one cannot be made (the CPU worker then computes as ggml cuts its rows).
    bool ready(int threads);
    void set_abort_callback(ggml_abort_callback cb, void * data);

    // The tiles of `rows` x `tokens` of `m` for a team of `threads`: enough for every thread, 16-token blocks cut
    // into row blocks where there are fewer blocks of tokens than threads, and up to 64 tokens a tile where there are
    // two tiles a thread or more (a lane's call costs a few microseconds).
    void plan(cpu_tiles_job & j, const multiply & m, row_range rows, row_range tokens, int threads);
    // The custom node that computes `j` on every thread of the team's graph (`scratch`: a float for its anchor).
    ggml_tensor * node(ggml_context * ctx, void * scratch, cpu_tiles_job & j);

  private:
    struct lane;
    static void run(ggml_tensor *, const ggml_tensor *, int ith, int nth, void * job);
    void run_tile(lane & l, cpu_tiles_job & j, int64_t t);

    ggml_backend_dev_t                 dev;
    ggml_backend_set_n_threads_t       set_threads = nullptr;
    ggml_backend_set_abort_callback_t  set_abort   = nullptr;
    ggml_abort_callback                abort_cb    = nullptr;
    void *                             abort_data  = nullptr;
    std::vector<std::unique_ptr<lane>> lanes;
    bool                               failed = false;
};

}  // namespace xdna
