// The NPU worker's multiplies begun ahead of their turn (multiply::ahead; compute_engine::run_ahead): the pipeline
// writes their results where the worker keeps them (`staged`), until release() says they may go into the result
// tensors, where it copies them then and writes what is left straight; or drops them.
#include "workers/npu/npu_worker.h"
#include "workers/npu/npu_pipeline.h"

#include "util/clock.h"
#include "util/spin.h"
#include "util/trace.h"

#include <algorithm>
#include <cstring>

namespace xdna {

void npu_worker::release(bool deliver) {
    {
        std::lock_guard<std::mutex> lock(release_mu);
        released_at = now_seconds();
        release_word.store(deliver ? 1 : 2, std::memory_order_release);
    }
    release_cv.notify_all();
}

int npu_worker::wait_release() {
    if (spins()) spin_until([this] { return release_word.load(std::memory_order_acquire) != 0; }, 0.002);
    std::unique_lock<std::mutex> lock(release_mu);
    release_cv.wait(lock, [this] { return release_word.load(std::memory_order_relaxed) != 0; });
    return release_word.load(std::memory_order_relaxed);
}

// A multiply begun ahead (multiply::ahead), once release() says deliver: the worker's rows kept so far (its blocks
// taken, and whatever the rest hold, which their takes overwrite or add to) are copied into the result tensors, on
// the lent threads, and the takes still to come write there. Mid-pipeline where the release comes first (the NPU
// then computes the rest meanwhile), else at the call's end.
void npu_worker::deliver_kept(call & c) {
    trace::scope ts("deliver results", c.rows.size());
    const multiply & m = *c.m;
    const int64_t tokens = m.node->src[1]->ne[1];
    on_lent_threads(tokens, std::clamp<int64_t>(tokens / 32, 1, helper.present() + 1), [&](int64_t, int64_t t_begin, int64_t t_end) {
        for (int i = 0; i < m.nodes(); ++i) {
            const ggml_tensor * out = m.node_at(i);
            const float * kept = staged[i].data() + c.rows.begin;
            for (int64_t t = t_begin; t < t_end; ++t) {
                memcpy((char *) out->data + t * out->nb[1] + c.rows.begin * sizeof(float), kept + t * out->ne[0],
                       size_t(c.rows.size()) * sizeof(float));
            }
        }
    });
    for (int i = 0; i < m.nodes(); ++i) {   // a dense multiply: job i is node i
        const ggml_tensor * out = m.node_at(i);
        for (int64_t t = 0; t < c.jobs[i].n_tokens; ++t) c.jobs[i].out[t] = (char *) out->data + t * out->nb[1];
    }
    c.delivered = true;
}

// The end of a call begun ahead: its rows delivered (release(true)) or dropped. Its time is the NPU's own, as at its
// turn (the pipeline, and the kept rows' copy where the release came after it; not the wait for the release between
// the two), and its head start apart: from its start to the release, what the multiply did not wait for. The planner
// learns the NPU's time as at its turn and what is left of it at the release (work_record::head_seconds). Learned as
// one time from the release on, a line through readings that are the NPU's time less the head start where that is
// positive and the copy where it is not, its model of K and V's part kept a fixed part it had not (-t 8: auto held
// 768 NPU rows, the CPU's 256 taking 1.4 ms against the NPU's 0.6) and a time per launch a fifth short of its own
// (the 2-CPU VM, -t 1, 160 GFLOP/s: 1.37 ms against 1.74).
work_record npu_worker::finish_ahead(call & c, work_record r, double t0) {
    if (wait_release() != 1 || !r.ok()) return r;
    double released = 0.0;
    {
        std::lock_guard<std::mutex> lock(release_mu);
        released = released_at;
    }
    const double copy_t0 = now_seconds();
    if (!c.delivered) deliver_kept(c);
    r.seconds     += now_seconds() - copy_t0;
    r.head_seconds = std::max(0.0, released - t0);
    return r;
}

}  // namespace xdna
