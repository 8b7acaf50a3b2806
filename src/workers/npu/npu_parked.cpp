// The NPU worker's runs in flight when a call ends early (a failure or a timeout), and the runs that timed out: they
// stay on the NPU until the driver ends them (npu_runtime::wait), and the worker's buffers they use go with them.
#include "workers/npu/npu_pipeline.h"

#include "util/log.h"

namespace xdna {

// Never leave a run writing into buffers the next call reuses. Once a run of the call has timed out (the runtime
// parked it), the others are not waited for either, so the rows go to the CPU at once: the runs still in flight are
// parked too, and the slots' buffers and the activation arena they read and write are let go to them (the next call
// allocates fresh ones).
void npu_worker::drain() {
    const uint64_t parked_before = parked_seen;
    for (auto & s : slots) {
        if (!s->run.active()) continue;
        if (rt->stats().parked > parked_before) {
            rt->park(s->run);
            continue;
        }
        try { rt->wait(s->run); } catch (...) {}
    }
    parked_seen = rt->stats().parked;
    if (parked_seen > parked_before) {
        release_slots();
        act_arena    = npu_buffer();
        arena_holds  = arena_key();
        arena_k_held = 0;
        staged_unsynced = false;
    }
}

// The runs that timed out stay on the NPU, holding their buffers and hardware contexts (of the machine's six), until
// the driver ends them (in-tree amdxdna: after 60 s; out-of-tree: 2-4 s): with max_parked of them the worker takes
// no rows until the driver has ended some, and the CPU takes the rows at once instead of after another timeout.
bool npu_worker::too_many_parked() const {
    const int n = rt->parked();
    const bool over = n >= max_parked;
    if (over != parked_over.exchange(over)) {
        if (over) {
            XDNA_LOG_WARN("NPU takes no rows while %d of its runs that timed out are still on the NPU (the most it "
                          "leaves there: %d), until the driver ends them; the CPU takes the rows", n, max_parked);
        } else {
            XDNA_LOG_WARN("NPU takes rows again: the driver has ended the runs that timed out");
        }
    }
    return over;
}

}  // namespace xdna
