// The emulated NPU's command queue as the amdxdna driver runs it: the executor thread, hung jobs, and the driver's
// watchdog that ends them (docs/emulator.md, "The driver's watchdog"). Runs of one hardware context execute in
// order; a hung job holds up its own context only, and the runs of other contexts go on.
//
// - in-tree driver (Linux's drivers/accel/amdxdna of released kernels): the DRM scheduler's job timeout
//   (HWCTX_MAX_TIMEOUT, 60 s) ends the hung job in ERT_CMD_STATE_TIMEOUT; the context is stopped and restarted,
//   which ends the runs queued behind it on that context in ERT_CMD_STATE_ABORT.
// - out-of-tree driver (amd/xdna-driver): a device-wide TDR checks every timeout_in_sec (2 s) and recovers only when
//   runs are pending and no context made progress since its last check (aie2_tdr.c): the hung job then ends in
//   ERT_CMD_STATE_TIMEOUT and every other pending run, of every context, in ERT_CMD_STATE_ABORT.
#include "emu_impl.h"

#include <cinttypes>

namespace xdna_emu {

namespace {

using clock = std::chrono::steady_clock;

clock::duration ms(int v) {
    return std::chrono::milliseconds(v);
}

const config& cfg_of(const command& cmd) {
    return cmd.kernel->ctx->dev->cfg;
}

} // namespace

void npu::publish(command& cmd, ert_cmd_state state, clock::time_point ends) {
    cmd.kernel.reset();   // the kernel and its hardware context may go now, before the host learns the run ended
    std::lock_guard<std::mutex> lock(cmd.status->mu);
    cmd.status->state = state;
    cmd.status->ends = ends;
    cmd.status->cv.notify_all();
}

std::shared_ptr<command> npu::next_runnable() {
    for (auto it = m_queue.begin(); it != m_queue.end(); ++it) {
        const xrt::hw_context_impl* ctx = (*it)->kernel->ctx.get();
        bool held_up = false;
        for (const hung_job& h : m_hung) held_up = held_up || h.cmd->kernel->ctx.get() == ctx;
        if (!held_up) {
            std::shared_ptr<command> cmd = std::move(*it);
            m_queue.erase(it);
            return cmd;
        }
    }
    return nullptr;
}

void npu::end_pending(ended_list* ended, const xrt::hw_context_impl* only, ert_cmd_state state) {
    for (auto it = m_queue.begin(); it != m_queue.end();) {
        if (!only || (*it)->kernel->ctx.get() == only) {
            ended->emplace_back(std::move(*it), state);
            it = m_queue.erase(it);
        } else {
            ++it;
        }
    }
}

void npu::watchdog(clock::time_point now, ended_list* ended) {
    for (size_t i = 0; i < m_hung.size();) {
        hung_job& h = m_hung[i];
        const config& cfg = cfg_of(*h.cmd);
        if (cfg.hang_ms && now >= h.since + ms(cfg.hang_ms)) {
            log(1, cfg.log_level, "run #%" PRIu64 ": its hang time (%d ms) is over, it runs", h.cmd->serial, cfg.hang_ms);
            h.cmd->fault = fault::none;
            m_queue.push_front(std::move(h.cmd));
            m_hung.erase(m_hung.begin() + i);
        } else if (cfg.driver == driver::intree && cfg.job_timeout_ms && now >= h.since + ms(cfg.job_timeout_ms)) {
            const xrt::hw_context_impl* ctx = h.cmd->kernel->ctx.get();
            const size_t before = ended->size();
            ended->emplace_back(std::move(h.cmd), ERT_CMD_STATE_TIMEOUT);
            m_hung.erase(m_hung.begin() + i);
            end_pending(ended, ctx, ERT_CMD_STATE_ABORT);
            log(1, cfg.log_level, "run #%" PRIu64 ": the driver's job timeout (%d ms) ends the hung run in "
                "ERT_CMD_STATE_TIMEOUT and %zu run(s) queued behind it on its context in ERT_CMD_STATE_ABORT",
                (*ended)[before].first->serial, cfg.job_timeout_ms, ended->size() - before - 1);
        } else {
            ++i;
        }
    }
    if (m_hung.empty()) return;
    const config& cfg = cfg_of(*m_hung.front().cmd);
    if (cfg.driver != driver::outoftree || !cfg.tdr_ms) return;
    // the TDR's checks come every period from when the device was first used; a check finds the device stuck when a
    // run is pending and none ended (or began) since the check before
    const clock::duration period = ms(cfg.tdr_ms);
    const clock::time_point tick = m_tdr_epoch + (now - m_tdr_epoch) / period * period;
    if (tick <= m_tdr_checked) return;
    m_tdr_checked = tick;
    clock::time_point activity = m_progress;
    for (const hung_job& h : m_hung) activity = std::max(activity, h.since);
    if (activity > tick - period) return;
    const size_t hung = m_hung.size(), before = ended->size();
    for (hung_job& h : m_hung) ended->emplace_back(std::move(h.cmd), ERT_CMD_STATE_TIMEOUT);
    m_hung.clear();
    end_pending(ended, nullptr, ERT_CMD_STATE_ABORT);
    log(1, cfg.log_level, "the driver's TDR finds no context making progress for %d ms: %zu hung run(s) end in "
        "ERT_CMD_STATE_TIMEOUT, %zu other pending run(s) in ERT_CMD_STATE_ABORT", cfg.tdr_ms, hung,
        ended->size() - before - hung);
}

clock::time_point npu::next_watchdog_event(clock::time_point now) const {
    clock::time_point next = clock::time_point::max();
    for (const hung_job& h : m_hung) {
        const config& cfg = cfg_of(*h.cmd);
        if (cfg.hang_ms) next = std::min(next, h.since + ms(cfg.hang_ms));
        if (cfg.driver == driver::intree && cfg.job_timeout_ms) next = std::min(next, h.since + ms(cfg.job_timeout_ms));
    }
    if (!m_hung.empty()) {
        const config& cfg = cfg_of(*m_hung.front().cmd);
        if (cfg.driver == driver::outoftree && cfg.tdr_ms) {
            const clock::duration period = ms(cfg.tdr_ms);
            next = std::min(next, m_tdr_epoch + ((now - m_tdr_epoch) / period + 1) * period);
        }
    }
    return next;
}

void npu::executor() {
    for (;;) {
        std::shared_ptr<command> cmd;
        ended_list ended;
        bool stopping = false;
        {
            std::unique_lock<std::mutex> lock(m_mu);
            for (;;) {
                if ((stopping = m_stopping)) {
                    // the process is going: what the device still holds ends, as the driver ends the jobs of a
                    // context whose process closed the device
                    for (hung_job& h : m_hung) ended.emplace_back(std::move(h.cmd), ERT_CMD_STATE_ABORT);
                    m_hung.clear();
                    end_pending(&ended, nullptr, ERT_CMD_STATE_ABORT);
                    break;
                }
                const clock::time_point now = clock::now();
                watchdog(now, &ended);
                if (!ended.empty() || (cmd = next_runnable())) break;
                const clock::time_point next = next_watchdog_event(now);
                if (next == clock::time_point::max()) {
                    m_cv.wait(lock);
                } else {
                    m_cv.wait_until(lock, next);
                }
            }
        }
        for (auto& e : ended) publish(*e.first, e.second, {});
        if (stopping) return;
        if (!cmd) continue;
        clock::time_point ends{};
        const ert_cmd_state final_state = execute(*cmd, &ends);
        {
            std::lock_guard<std::mutex> lock(m_mu);
            if (final_state == ERT_CMD_STATE_RUNNING) {
                m_hung.push_back({std::move(cmd), clock::now()});
                continue;
            }
            m_progress = clock::now();
        }
        publish(*cmd, final_state, ends);
    }
}

} // namespace xdna_emu
