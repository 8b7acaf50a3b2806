#include "backend/compute.h"

#include "backend/claim.h"
#include "config/config.h"

#include "util/clock.h"
#include "util/log.h"
#include "util/trace.h"
#include "workers/worker.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace xdna {

compute_engine::compute_engine(split_planner & planner, split_planner & decode_planner, int min_batch, cpu_worker & cpu,
                               std::vector<worker *> devices)
    : prompt_planner(planner), decode_planner(decode_planner), min_batch(min_batch), cpu(cpu), devices(std::move(devices)) {}

std::string compute_engine::summary() const {
    // the multiplies' own time tells the split's quality apart from the rest of a prompt (attention, norms), which
    // moves from one process to the next as much as the splits differ; a weight's first conversion for the NPU is paid
    // once, so it is named apart
    char head[192];
    snprintf(head, sizeof(head), "%lld multiplies in %.3f s (%.3f s of it where a weight was converted for a device, "
             "%lld begun ahead); ", (long long) n_multiplies, wall_s, first_use_wall_s, (long long) n_ahead);
    return head + totals.line();
}

// Whether the CPU worker's team drives a device worker between slices of its rows (cpu_worker::compute's `drive`)
// instead of that worker's own thread: where the team takes every core of 4 or more, that thread would take a core
// from it; driven, the NPU costs the team no thread (XDNA_TEST_TEAM_DRIVES forces either way, for tests).
bool compute_engine::team_drives() const {
    const int policy = get_config().npu_team_drives;
    if (policy == 0 || cpu.threads() < 2) return false;
    return policy > 0 || (cpu.cores() >= 4 && cpu.threads() >= cpu.cores());
}

// Who takes part in `m`: the device workers that accept it and have work in it, each having described its part, then
// the CPU worker (the planner decides who gets rows: next to the GPU, the NPU only joins large multiplies).
void compute_engine::participants(multiply & m, std::vector<worker *> & ws, std::vector<plan_worker> & pw) const {
    for (worker * w : devices) {
        if (!w->accepts(m) || !w->describe(m)) continue;
        ws.push_back(w);
        const bool npu = w->kind() == worker_kind::npu;
        // a part of the rows ends in narrow blocks (launch_cost::part_of), unless the CPU's team drives the NPU:
        // then the team takes the last result with it once its own rows are done (end_driven)
        if (npu && !team_drives()) m.npu_cost.part_of = m.node->src[0]->ne[1];
        // weights the NPU converts on every call cost it otherwise than the same shape's kept ones: learned apart
        if (npu && m.npu_weights_per_call) m.key.per_call = true;
        pw.push_back({ w->kind(), w->row_align(m), npu ? m.npu_cost : launch_cost{}, !npu || m.npu_weights_ready });
    }
    ws.push_back(&cpu);
    pw.push_back({ worker_kind::cpu, cpu.row_align(m), launch_cost{}, true, team_drives() });
}

// The NPU's rows of the multiply (the last range is the CPU's).
static int64_t npu_rows_of(const std::vector<worker *> & ws, const std::vector<row_range> & rows) {
    int64_t npu = 0;
    for (size_t i = 0; i + 1 < ws.size(); ++i) if (ws[i]->kind() == worker_kind::npu) npu += rows[i].size();
    return npu;
}

// The CPU's part, on this thread while the device workers run: its own rows, then, of a MUL_MAT_ID, the rows of the
// NPU's range for the experts the planner gave the CPU whole.
work_record compute_engine::cpu_part(const multiply & m, row_range own, const std::vector<worker *> & ws,
                                     const std::vector<row_range> & rows, const cpu_worker::driven_work * drive) {
    work_record r;
    {
        trace::scope ts("cpu rows", own.size());
        r = cpu.compute(m, own, drive);
    }
    const double own_seconds = r.seconds;
    for (size_t i = 0; r.ok() && i + 1 < ws.size(); ++i) {
        if (ws[i]->kind() != worker_kind::npu || rows[i].empty() || !m.any_on_cpu()) continue;
        trace::scope ts("cpu experts", rows[i].size());
        r = cpu.compute_experts(m, rows[i]);
    }
    r.seconds = own_seconds;   // what the planner learns of the CPU: its own rows
    return r;
}

// The device worker the CPU worker's team drives in `m` (worker.h), or null: where the team takes every core, the NPU
// worker's thread would take one from it (-t 16 of 16 cores: the team one thread short, made whole after every
// multiply, and the NPU's thread still waiting for a core now and then), so the team does the NPU's host work itself,
// between slices of its rows. One worker at most.
worker * compute_engine::driven_worker(const std::vector<worker *> & ws, const std::vector<row_range> & rows) const {
    if (!team_drives()) return nullptr;
    for (size_t i = 0; i + 1 < ws.size(); ++i) {
        if (!rows[i].empty() && ws[i]->drivable()) return ws[i];
    }
    return nullptr;
}

// Slices of the CPU's part for a driven worker (cpu_worker::compute cuts them, no finer than its kernels work): the
// NPU worker keeps up to three runs in flight, so a boundary every two of its launches keeps it fed where the CPU's
// part lasts about as long as the NPU's (what the planner aims at): the launches past the first three, two per
// boundary. And at least four slices: the boundaries are when the NPU's end is seen, which the planner learns its time
// by (npu_worker::driven_end); with none, a probe of one block looked as slow as the CPU's whole part (the 2-CPU
// VM, -t 2, emulated at 3,140 GFLOP/s: auto gave the NPU 31% of the rows, the NPU worker's thread 89%).
static int driven_slices(const multiply & m, int64_t npu_rows) {
    const int64_t launches = (int64_t) std::ceil(m.npu_cost.units(npu_rows));
    return (int) std::max<int64_t>(4, 1 + (launches - 2) / 2);
}

// A driven worker's end, once the CPU's rows are done: the calling thread finishes it (waiting for the device) and the
// rest of the team takes parts of each result (help()), unless the CPU failed.
work_record compute_engine::end_driven(worker * w, bool cpu_ok) {
    work_record r;
    bool ended = false;   // end() exactly once: the team's graph may report a failure (an abort) after running it
    if (cpu_ok) {
        cpu.run_on_threads([&r, &ended, w](int ith, int) {
            if (ith != 0) return w->help();
            r = w->end();
            ended = true;
        });
    }
    if (!ended) r = w->end();
    return r;
}

bool compute_engine::pairs() const {
    if (!cpu.takes_pairs()) return false;
    for (const worker * w : devices) {
        if (!w->takes_pairs()) return false;
    }
    return true;
}

// The auto split gave the NPU none of `m`'s rows, but may give it rows of this weight later: the NPU's one-time work
// for the weight (converting it into its cache) is done now, after the multiply, so that a later multiply does not
// pay for it. In llama-bench that is the untimed warm-up prompt, where every weight is met first: at -t 16 of 16
// cores, the NPU emulated at 350 GFLOP/s, a process whose warm-up prompt had kept the NPU out of Q and K/V converted
// those 31 weights in its first timed prompt, 278 ms of its three timed prompts' 1,595 ms of multiplies, and ran at
// 798 prompt tokens/s where share 0.25 ran at 1,014 beside it (other auto processes converted none there: 919-996).
// Only where the split may change: not at a fixed share, nor where the NPU cannot take part. Once per weight; its
// time counts as the multiplies' one-time work.
void compute_engine::prepare_npu_ahead(const multiply & m, const std::vector<worker *> & ws, int64_t npu_rows,
                                       plan_reason why) {
    if (npu_rows > 0 || !plan_reason_is_auto(why)) return;
    for (worker * w : ws) {
        if (w->kind() != worker_kind::npu) continue;
        const double t0 = now_seconds();
        if (!w->prepare_ahead(m)) continue;
        const double once = now_seconds() - t0;
        wall_s += once;
        first_use_wall_s += once;
    }
}

// The CPU worker's threads lent to the device workers of `m` for host work they would otherwise do alone:
// - converting the NPU's activations before the devices start (all of them where the team drives the NPU, else the
//   first K block: npu_worker::before_start), where there are several threads (the NPU's thread alone would take
//   longer, before its first launch), or where the CPU has no rows or drives the NPU. Beside the CPU's own rows too:
//   the 16-core host, -t 8, emulated at 1,441 GFLOP/s, share 0.75: the NPU worker's time before its first launch
//   305-450 us -> 31-43 us, the median multiply of each shape 1,460-2,170 us against 1,650-2,460 (gate and up, a pair:
//   3,860 against 4,020); the CPU's rows start later by the team's conversion (share 0.5, where the CPU's part is the
//   longer: 2-4% slower in tokens/s, three passes);
// - a device worker's one-time work (the NPU converting a weight it meets for the first time), where there are
//   several threads: one thread alone does it better beside the CPU's rows. `once_on_cpu` is set where they did.
void compute_engine::lend_cpu_threads(multiply & m, bool cpu_idle, bool drives, bool & once_on_cpu) {
    if (cpu_idle || drives || cpu.threads() > 1) {
        m.convert_bf16 = [this, &m](const std::vector<bf16_block> & b, const std::function<void(int, int)> & then) {
            return cpu.convert_bf16(m.node->src[1], b, then);
        };
    }
    if (cpu.threads() > 1) {
        m.on_cpu_threads = [this, &once_on_cpu](const std::function<void(int, int)> & fn) {
            once_on_cpu = true;
            return cpu.run_on_threads(fn);
        };
    }
}

// Starts the device workers on their rows (the driven one on this thread, to be stepped by the CPU's team).
void compute_engine::start_devices(call & c) {
    const size_t n_dev = c.ws.size() - 1;
    // the device workers taking rows on threads of their own have cores of their own where the team left one each
    int threaded = 0;
    for (size_t i = 0; i < n_dev; ++i) threaded += !c.rows[i].empty() && c.ws[i] != c.driven;
    const int  spare = cpu.cores_to_spare();
    const bool own_cores = spare >= threaded;
    const int  idle = std::max(0, spare - threaded);   // for the device workers' host work
    for (size_t i = 0; i < n_dev; ++i) {
        if (c.rows[i].empty()) continue;
        c.busy0[i] = c.ws[i]->device_busy_seconds();
        c.ws[i]->own_core(own_cores);
        c.ws[i]->idle_cores(c.ws[i]->shares_host_work() ? idle : 0);
        if (c.ws[i] == c.driven) c.ws[i]->begin_driven(c.m, c.rows[i]);
        else c.ws[i]->begin(c.m, c.rows[i]);
    }
}

// The CPU's part on this thread, then the driven worker's end (the team takes its last results): the CPU's record,
// its time its own rows'.
work_record compute_engine::run_cpu(call & c) {
    const size_t n_dev = c.ws.size() - 1;
    cpu_worker::driven_work drive;
    if (c.driven) {
        drive.w      = c.driven;
        drive.slices = driven_slices(c.m, npu_rows_of(c.ws, c.rows));
    }
    work_record r = cpu_part(c.m, c.rows[n_dev], c.ws, c.rows, c.driven ? &drive : nullptr);
    if (c.driven) {
        work_record & d = c.records[std::find(c.ws.begin(), c.ws.end(), c.driven) - c.ws.begin()];
        d = end_driven(c.driven, r.ok());
        r.seconds = std::max(0.0, r.seconds - d.team_seconds);   // the CPU's own rows, for the planner
    }
    return r;
}

// The device workers' ends, each record completed; rows a worker failed on are redone on the CPU. The CPU worker's
// team, idle now, first takes a share of their host work until they are done, where a core is free for the NPU
// worker's thread beside it. Where the team took every core, its threads still spin and one more would take that
// thread's core (so it is not lent then; at share 0.75, where the team was one thread short, lent is the faster).
ggml_status compute_engine::collect_devices(call & c) {
    const size_t n_dev = c.ws.size() - 1;
    const bool lend = cpu.cores_to_spare() > 0;
    for (size_t i = 0; lend && i < n_dev; ++i) {
        if (c.rows[i].empty() || !c.ws[i]->shares_host_work() || c.ws[i] == c.driven) continue;
        worker * w = c.ws[i];
        if (!cpu.run_on_threads([w](int, int) { w->help(); })) w->help();
    }
    for (size_t i = 0; i < n_dev; ++i) {
        if (c.rows[i].empty()) continue;
        work_record & r = c.records[i];
        if (c.ws[i] != c.driven) r = c.ws[i]->end();
        complete(c, i, r);
        if (c.busy0[i] >= 0.0) r.busy_seconds = c.ws[i]->device_busy_seconds() - c.busy0[i];
    }
    // every worker ended first: none is left writing into the result, whatever a redo returns
    for (size_t i = 0; i < n_dev; ++i) {
        const work_record & r = c.records[i];
        if (c.rows[i].empty() || r.ok()) continue;
        // the result must still be right: the CPU redoes these rows
        XDNA_LOG_WARN("%s worker failed on %s (%s); its rows are recomputed on the CPU", c.ws[i]->name(),
                      c.m.key.str().c_str(), r.why().c_str());
        const work_record redo = cpu.compute(c.m, c.rows[i]);
        if (!redo.ok()) return redo.status;
    }
    return GGML_STATUS_SUCCESS;
}

void compute_engine::complete(const call & c, size_t i, work_record & r) const {
    r.kind  = c.ws[i]->kind();
    r.rows  = c.rows[i];
    r.nodes = c.m.nodes();
}

// Every record of the multiply to the report's totals and the planner, and its wall time to the planner.
void compute_engine::learn(call & c, split_planner & planner, double wall, bool once_on_cpu) {
    bool first_use = false;   // a device worker did one-time work (converted a weight) beside the CPU's part
    for (size_t i = 0; i < c.records.size(); ++i) {
        if (c.rows[i].empty()) continue;
        const work_record & r = c.records[i];
        totals.add(r);
        if (r.kind == worker_kind::cpu) continue;
        first_use = first_use || r.once_seconds > 0.0;
        planner.learn(c.m.key, r);
    }
    // The CPU's time is learned unless a device worker converted a weight beside it: that one-time burst takes a core
    // the CPU's threads then wait for (the first prompt's multiplies many times slower), and the first measurements of
    // a shape would seed every other shape with it.
    if (!first_use) planner.learn(c.m.key, c.records.back());
    // what the multiply cost as a whole, unless one-time work (a weight's first conversion) is in it
    wall_s += wall;
    if (first_use || once_on_cpu) first_use_wall_s += wall;
    else planner.report_outcome(c.m.key, npu_rows_of(c.ws, c.rows), wall);
}

// The multiply's event on the timeline, from its records: who took which rows, in what time.
void compute_engine::trace_multiply(const call & c, const ggml_tensor * twin, double t_start, plan_reason why) const {
    std::string text = std::string(c.m.node->name) + (twin ? std::string(" + ") + twin->name : "") + ": " +
                       c.m.key.str() + ": npu " + std::to_string(npu_rows_of(c.ws, c.rows)) + " rows (" +
                       plan_reason_name(why) + ")";
    for (size_t i = 0; i < c.records.size(); ++i) {
        const work_record & r = c.records[i];
        if (c.rows[i].empty()) continue;
        char buf[96];
        snprintf(buf, sizeof(buf), "; %s %lld rows in %.3f ms%s", worker_kind_name(r.kind), (long long) r.rows.size(),
                 1e3 * r.seconds, r.ok() ? "" : " (failed)");
        text += buf;
    }
    trace::add("multiply", t_start, now_seconds(), c.m.key.rows, text);
}

// The engines holding a multiply begun ahead, by the thread that began it. The NPU worker is the holder's until that
// multiply's turn; a graph that stops between the two (an abort) leaves it held, and another engine (another llama.cpp
// context) computing on that same thread would wait for it for good: it drops it first (drop_held_ahead).
static std::mutex                                            compute_engine_ahead_mu;
static std::unordered_map<std::thread::id, compute_engine *> compute_engine_ahead_holders;

compute_engine::~compute_engine() {
    drop_ahead();
}

void compute_engine::drop_held_ahead() {
    compute_engine * other = nullptr;
    {
        std::lock_guard<std::mutex> lock(compute_engine_ahead_mu);
        const auto it = compute_engine_ahead_holders.find(std::this_thread::get_id());
        if (it != compute_engine_ahead_holders.end() && it->second != this) other = it->second;
    }
    if (other) other->drop_ahead();
}

// `ahead` and the registry change together, under its lock (another engine may drop this one's, drop_held_ahead)
void compute_engine::hold_ahead(std::unique_ptr<ahead_call> a) {
    a->thread = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(compute_engine_ahead_mu);
    compute_engine_ahead_holders[a->thread] = this;
    ahead = std::move(a);
}

std::unique_ptr<compute_engine::ahead_call> compute_engine::unhold_ahead() {
    std::lock_guard<std::mutex> lock(compute_engine_ahead_mu);
    std::unique_ptr<ahead_call> a = std::move(ahead);
    if (a) {
        const auto it = compute_engine_ahead_holders.find(a->thread);
        if (it != compute_engine_ahead_holders.end() && it->second == this) compute_engine_ahead_holders.erase(it);
    }
    return a;
}

// The planner's split of the call among its participants (c.ws, described as pw).
void compute_engine::plan_call(call & c, split_planner & planner, const std::vector<plan_worker> & pw, plan_reason & why) {
    c.rows    = planner.plan(c.m.key, c.m.node->src[0]->ne[1], pw, &why);
    c.records.assign(c.ws.size(), work_record{});
    c.busy0.assign(c.ws.size(), -1.0);
    c.driven  = driven_worker(c.ws, c.rows);
}

void compute_engine::run_ahead(const ggml_tensor * node, const ggml_tensor * twin) {
    drop_ahead();   // one at a time (after a compute(), which took or dropped any, there is none)
    if (node->op != GGML_OP_MUL_MAT || claim_tokens(node) < min_batch || team_drives()) return;
    std::unique_ptr<ahead_call> a(new ahead_call);
    call & c = a->c;
    c.m = describe_multiply(node, twin);
    std::vector<plan_worker> pw;
    participants(c.m, c.ws, pw);
    bool npu = false;
    for (size_t i = 0; i + 1 < c.ws.size(); ++i) {
        if (!c.ws[i]->runs_ahead()) return;
        npu = npu || c.ws[i]->kind() == worker_kind::npu;
    }
    // the CPU's threads would convert a weight met for the first time: not while llama.cpp waits for them
    if (!npu || !c.m.npu_weights_ready || c.m.npu_weights_per_call) return;
    c.m.key.ahead = true;   // learned apart from the same shape at its turn
    plan_call(c, prompt_planner, pw, a->why);
    c.m.ahead = true;
    start_devices(c);
    a->graph = graph_epoch();
    hold_ahead(std::move(a));
}

// The call run ahead for this multiply (node and twin, in the graph after the one it was begun in), if there is one;
// any other is dropped, its devices' results with it.
std::unique_ptr<compute_engine::ahead_call> compute_engine::take_ahead(const ggml_tensor * node, const ggml_tensor * twin) {
    std::unique_ptr<ahead_call> a = unhold_ahead();
    if (a && (a->c.m.node != node || a->c.m.twin != twin || graph_epoch() != a->graph + 1)) {
        end_dropped(std::move(a));
        return nullptr;
    }
    return a;
}

void compute_engine::drop_ahead() {
    end_dropped(unhold_ahead());
}

void compute_engine::end_dropped(std::unique_ptr<ahead_call> a) {
    if (!a) return;
    release_devices(a->c, false);
    for (size_t i = 0; i + 1 < a->c.ws.size(); ++i) {
        if (!a->c.rows[i].empty()) a->c.ws[i]->end();
    }
}

void compute_engine::release_devices(call & c, bool deliver) {
    for (size_t i = 0; i + 1 < c.ws.size(); ++i) {
        if (!c.rows[i].empty()) c.ws[i]->release(deliver);
    }
}

ggml_status compute_engine::compute(const ggml_tensor * node, const ggml_tensor * twin) {
    n_multiplies += twin ? 2 : 1;
    trace::name_thread("llama.cpp thread: CPU worker");
    const double t_start = trace::on() ? now_seconds() : 0.0;
    split_planner & planner = claim_tokens(node) < min_batch ? decode_planner : prompt_planner;
    drop_held_ahead();
    // run ahead (run_ahead): planned, the NPU begun on its rows at an earlier multiply's end
    const std::unique_ptr<ahead_call> early = take_ahead(node, twin);
    call local;
    call & c = early ? early->c : local;
    plan_reason why = early ? early->why : plan_reason::no_npu;
    bool once_on_cpu = false;   // the CPU's threads did one-time work for a device worker
    double t_plan = now_seconds();   // the outcome: from the plan (or this turn) to the end, every wait included
    if (early) {
        release_devices(c, true);   // the devices' rows go into the result now, beside the CPU's own
        if (npu_rows_of(c.ws, c.rows) > 0) n_ahead += c.m.nodes();
    } else {
        c.m = describe_multiply(node, twin);
        planner.assign_experts(c.m);
        std::vector<plan_worker> pw;
        participants(c.m, c.ws, pw);
        t_plan = now_seconds();
        plan_call(c, planner, pw, why);
        lend_cpu_threads(c.m, c.rows.back().empty(), c.driven != nullptr, once_on_cpu);
        start_devices(c);   // then the CPU's part here, then collect
    }
    const size_t n_dev = c.ws.size() - 1;
    work_record & cpu_res = c.records[n_dev];
    cpu_res = run_cpu(c);
    complete(c, n_dev, cpu_res);
    if (!cpu_res.ok()) {
        // still collect the device workers before giving up, so none is left writing into the result
        for (size_t i = 0; i < n_dev; ++i) if (!c.rows[i].empty() && c.ws[i] != c.driven) c.ws[i]->end();
        XDNA_LOG_ERROR("CPU worker failed on %s: %s", c.m.key.str().c_str(), cpu_res.why().c_str());
        return cpu_res.status;
    }
    const ggml_status st = collect_devices(c);
    if (st != GGML_STATUS_SUCCESS) return st;
    learn(c, planner, now_seconds() - t_plan, once_on_cpu);
    prepare_npu_ahead(c.m, c.ws, npu_rows_of(c.ws, c.rows), why);
    if (trace::on()) trace_multiply(c, twin, t_start, why);
    return GGML_STATUS_SUCCESS;
}

}  // namespace xdna
