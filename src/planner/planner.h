// The split planner owns every decision about which worker computes which output rows of a multiply.
// Workers only execute a row range; the planner learns from the record of how it went (work_record.h).
//
// Rows are laid out NPU first, then GPU, then CPU: [0, npu) [npu, npu+gpu) [npu+gpu, n). The NPU gets whole
// `npu_step`-row steps (possibly none, or every row); every worker's boundary respects its row alignment.
//
// Auto split (npu_share < 0), per shape:
// - each worker's time is learned as a + b * work (cost_model.h): the CPU's and GPU's in proportion to their rows,
//   the NPU's in launches of the blocks its worker chose (the multiply's description, m.npu_cost), starting from the cost
//   the worker predicts and corrected by measurement: its fixed part and its cost per launch apart;
// - the NPU gets the number of steps that makes the multiply finish earliest, given that the GPU and CPU share the
//   other rows in proportion to their speed; a share changes only when the predicted gain exceeds `hysteresis`;
// - until its model rests on two measurements the NPU keeps one block, and a shape it dropped out of gets one block
//   again after `reprobe_every` multiplies (then less often while it stays out), so one bad measurement cannot keep
//   it off for good; a re-probe waits a while for a multiply whose weight the NPU has converted (plan_worker::ready).
// The planner reads no clock: it is deterministic given its options and the calls made to it (tests drive it with
// simulated workers on a fake clock). One mutex makes it safe to share between backend instances.
#pragma once

#include "planner/cost_model.h"
#include "workers/multiply.h"
#include "workers/work_record.h"

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace xdna {

// Why a plan gave the NPU what it did (the decision line says it).
enum class plan_reason { probe, reprobe, auto_split, measured_slower, whole_measured_faster, neighbour_measured_faster,
                         fixed_share, only_worker, below_gpu_size, no_npu };
const char * plan_reason_name(plan_reason r);
// Whether the auto split chose the NPU's rows for that reason, so that a later multiply of the shape may choose others
// (not a fixed share, nor a multiply the NPU cannot take part in).
bool plan_reason_is_auto(plan_reason r);

// A worker as the planner sees it for one multiply.
struct plan_worker {
    worker_kind   kind;
    int64_t       align = 1;   // row alignment it needs for this multiply
    launch_cost   cost  = {};  // NPU only, optional (from m.npu_cost)
    bool          ready = true;  // NPU only: its weights are converted already (m.npu_weights_ready)
    bool          sliced = false;  // CPU only: its rows are cut into slices with the NPU's host work between them (the
                                   // CPU worker's team drives the NPU): beside the NPU it costs more per multiply
};

struct planner_options {
    double  npu_share      = -1.0;    // 0..1 fixed share of the rows for the NPU; < 0: auto
    int64_t npu_step       = 256;     // the NPU gets whole steps of this many rows
    int     reprobe_every  = 16;      // a shape the NPU dropped out of gets one block again after this many multiplies,
    int     reprobe_max_every = 128;  // then after twice as many each time it stays out, up to this many
    int     alone_every    = 64;      // a shape whose NPU takes rows has its CPU measured alone again after this many
    int     alone_max_every = 512;    // multiplies, then after twice as many each time, up to this many...
    double  alone_cost     = 0.01;    // ...and at least as many as keep what those measurements cost (the CPU alone
                                      // slower than the split) under this share of the shape's time
    double  whole_try      = 1.3;     // the NPU is tried on every row when its model predicts at most this many
                                      // times the best split's time for them (its whole is faster, see npu_whole)
    double  whole_share    = 0.5;     // ...or, where the CPU's team drives it, gives it at least this share of the rows
                                      // (its model of a part may be far off its whole: the team is slowed by the
                                      // split's boundaries)
    double  hysteresis     = 0.03;    // auto changes a share only when that is predicted to save more than this
    double  max_margin     = 0.12;    // the most that repeated changes raise that margin to
    int     margin_decay   = 256;     // multiplies without a change after which a raised margin halves
    int64_t moe_min_tokens = 16;      // a MUL_MAT_ID's experts with fewer routed tokens go to the CPU whole
    double  gpu_npu_min_gflop = 4.0;  // next to a GPU worker the NPU only joins multiplies of at least this size
    double  gpu_share      = -1.0;    // 0..1 fixed share of the rows the NPU leaves for the GPU (the rest: CPU); < 0: auto
    double  cpu_interference = 0.15;  // the CPU next to the NPU and alone are told apart past this relative gap
    double  outcome_margin = 0.05;    // a share whose multiplies took this much longer on average than with the NPU
    int     outcome_samples = 8;      // out (over at least this many of them) is kept out for `out_every` multiplies,
    int     out_every = 64;           // then twice as long each time, up to `out_max_every`
    int     out_max_every = 1024;
    int     near_samples = 4;         // multiplies a neighbouring share is measured for, against the share auto settled on
    // Where decision lines go when they change. Empty: the plugin's debug log (shown with GGML_XDNA_DEBUG=1).
    std::function<void(const std::string &)> log;
};

class split_planner {
  public:
    explicit split_planner(planner_options opts = {});

    // MUL_MAT_ID: which experts the CPU computes whole, whatever the split (m.cpu_expert): those with fewer routed
    // tokens than `moe_min_tokens`, whose launches would cost the NPU more than their rows are worth. The CPU
    // computes them beside the device workers. Before the workers describe their part (their cost depends on it).
    void assign_experts(multiply & m) const;

    // Row ranges for `workers` (same order) of a multiply with `n_rows` output rows. Every row goes to exactly one
    // worker. Deterministic given the options and the calls so far. `why`, if given, says why the NPU got its rows.
    std::vector<row_range> plan(const shape_key & key, int64_t n_rows, const std::vector<plan_worker> & workers,
                                plan_reason * why = nullptr);

    // What a worker's part of a multiply of `key` teaches the planner: its record (work_record.h) as the engine
    // completed it. A failed part teaches nothing; a weight's first conversion in it (once_seconds) is left out. Where
    // the record measures a fixed part apart (the NPU's set-up and last result), its model learns that part and the
    // cost per launch apart, from every record.
    void learn(const shape_key & key, const work_record & r);

    // A multiply of `key`, its NPU on `npu_rows` rows, took `seconds` from its plan to its end: every worker, the waits
    // between them (the engine's clock; without one-time work such as a weight's first
    // conversion). Auto judges its share by these too, not by its models alone: a share whose multiplies took longer
    // on average than those with the NPU out is kept out for a while (plan_reason::measured_slower), and one whose
    // multiplies took longer than those with the NPU on every row gives the NPU every row for a while
    // (plan_reason::whole_measured_faster). And a share next to the one auto settled on (one block more or fewer for
    // the NPU) is measured now and then: where its multiplies took less time by more than `hysteresis`, auto moves
    // there and stays for a while (plan_reason::neighbour_measured_faster), whatever the models say.
    void report_outcome(const shape_key & key, int64_t npu_rows, double seconds);

    // One line: the mode, multiplies planned, shapes, share changes and the measurements it asked for. For the end of a
    // run (or whenever asked); what each worker computed is the engine's line (work_totals).
    std::string summary() const;

    // One line per shape: its current split and what was learned (GGML_XDNA_DEBUG=1 at exit).
    std::vector<std::string> shape_report() const;

    // What was learned, per shape, as text (planner_state.cpp), and back: a shape read starts from its models and
    // decision as they were, and learns on as if the process had not ended. load_state returns the shapes read; 0,
    // with `why`, for a text it did not write (then nothing changes).
    std::string save_state() const;
    size_t      load_state(const std::string & text, std::string * why);

    // The NPU rows auto currently settles on for `key` (-1: no decision yet), for tests and tools.
    int64_t npu_rows_of(const shape_key & key) const;

    const planner_options & options() const { return opts; }

  private:
    // indices of the per-worker arrays below (model, last), by worker_kind
    static constexpr int NPU = (int) worker_kind::npu, GPU = (int) worker_kind::gpu, CPU = (int) worker_kind::cpu;

    // The mean of the last few wall times (report_outcome). A mean, not the models' trimmed centre: where one multiply
    // in several waits milliseconds for a core, that wait is a cost of the share, and only the mean carries it (-t 16
    // of 16 cores, 3,072 x 1,024, NPU emulated at 1,441 GFLOP/s on 1,536 rows: median 2.42 ms, mean 3.50, against 3.10
    // and 3.18 with the NPU out).
    struct wall_window {
        static constexpr int size = 16;
        double  t[size] = {};
        int     n = 0, head = 0;
        void    add(double s) { t[head] = s; head = (head + 1) % size; n = std::min(n + 1, size); }
        double  mean() const { double m = 0.0; for (int i = 0; i < n; ++i) m += t[i]; return n ? m / n : 0.0; }
        // the mean without the longest reading (from three on): one multiply that waited for the machine, whatever
        // its share, does not decide, where waits that come again and again still do (report_outcome)
        double  mean_but_longest() const {
            if (n < 3) return mean();
            double m = 0.0, top = t[0];
            for (int i = 0; i < n; ++i) { m += t[i]; top = std::max(top, t[i]); }
            return (m - top) / (n - 1);
        }
        // the variance of mean() (of the readings' spread, over n)
        double  mean_var() const {
            if (n < 2) return 0.0;
            const double m = mean();
            double v = 0.0;
            for (int i = 0; i < n; ++i) v += (t[i] - m) * (t[i] - m);
            return v / (n - 1) / n;
        }
    };
    // A while in which the multiplies' own times overrule the models (report_outcome): until `calls` reaches `until`;
    // `gap` multiplies the last time, twice as many each time it starts again; `times` it did.
    struct outcome_spell {
        int64_t until = 0, gap = 0, times = 0;
        bool    on(int64_t calls) const { return calls < until; }
        void    start(int64_t calls, int64_t every, int64_t most) {
            gap   = std::min<int64_t>(std::max<int64_t>(2 * gap, every), most);
            until = calls + gap;
            times++;
        }
    };
    struct shape_state {
        cost_model    model[3];             // indexed by worker_kind; the CPU's while the NPU works alongside
        // The NPU's fixed part per multiply, when its worker measures it apart (npu_split): model[NPU] then holds only
        // the part that grows with the launches, and this the rest (x = 1: its slope is the typical fixed time).
        cost_model    npu_fixed;
        bool          npu_split   = false;
        // The CPU while the NPU takes no rows. The two differ: the NPU worker's host thread competes with the CPU
        // worker's threads (and takes one of them when they would use every core), so a CPU that looks slow next
        // to the NPU may be fast alone, and a share that only pays against that slower CPU must not be chosen.
        // Both are used only once they differ by more than `cpu_interference` (real interference is 1.5x and more);
        // otherwise every CPU measurement together, so that noise in the few alone measurements decides nothing.
        cost_model    cpu_alone, cpu_all;
        // The NPU computing every row, apart: the CPU's threads, with no rows of their own, then do its host work
        // (convert its activations, take half of its results), so it is faster than its model of a part of the rows
        // says (measured, -t 8, emulated NPU at 3,140 GFLOP/s: share 1 at 1,122 prompt tokens/s against auto at
        // 1,004 with the NPU at 82% of the rows). Learned with x = 1: its slope is the time of all rows.
        cost_model    npu_whole;
        // Begun ahead of its turn (shape_key::ahead): the NPU's head start, from its start to the multiply's turn
        // (work_record::head_seconds; x = 1: its slope is the typical head start). Its part then costs the multiply
        // what is left of its time at its turn (npu_wait); npu_whole holds that of every row.
        cost_model    npu_head;
        int64_t       whole_tries = 0;      // multiplies given to the NPU whole to learn npu_whole
        int64_t       whole_walls = 0;      // and in this process to time the whole's multiplies (not kept)
        // Seeded from the other shapes (seed_from_others) while it is young: the CPU alone, measured once per
        // process, is not measured again for this shape (seeded_alone); seed_done once it has its own measurements.
        bool          seeded_alone = false, seed_done = false;
        int64_t       planned_npu = 0;      // NPU rows of this shape's last plan: which CPU model a record teaches
        launch_cost   hint;               // the NPU's, as last given
        int64_t       calls       = 0;
        int64_t       calls_here  = 0;      // of them in this process (not kept in the state file)
        int64_t       npu_cur     = -1;     // NPU rows auto settled on (-1: none yet)
        int64_t       gpu_cur     = -1;     // GPU rows chosen last, for the rows left to GPU + CPU below
        int64_t       gpu_left    = -1;
        // The GPU's fixed part per multiply (submit, activations in), when its worker measures it apart (gpu_split):
        // model[GPU] then holds only the part that grows with the rows (planner_gpu.cpp). Multiplies since the GPU
        // was last given rows while its fixed part kept it out, and the back-off between such re-probes.
        cost_model    gpu_fixed;
        bool          gpu_split   = false;
        int64_t       gpu_skipped = 0, gpu_gap = 0;
        int64_t       npu_skipped = 0;      // multiplies since the NPU last took rows while dropped out
        int64_t       reprobe_gap = 0;      // multiplies between re-probes now
        int64_t       alone_skipped = 0;    // multiplies since the CPU was last measured alone while the NPU takes rows
        int64_t       alone_gap   = 0;      // multiplies between those measurements now
        int64_t       part_skipped = 0;     // multiplies since a part was last measured while the NPU takes every row
        int64_t       part_gap    = 0;      // multiplies between those measurements now
        bool          part_probe  = false;  // the last plan was such a measurement (learn: it may replace the models)
        int64_t       explore_in  = 0;      // multiplies since the NPU last measured another size (auto_npu_rows)
        int64_t       explored    = 0;      // times it did
        int64_t       changes     = 0;      // times npu_cur changed after the first decision
        int64_t       changed_at  = 0;      // `calls` when npu_cur last changed
        double        margin      = 0.0;    // the gain a change must promise now (hysteresis, raised on reversals)
        int64_t       stable      = 0;      // multiplies since the last change or margin decay
        int64_t       last[3]     = { -1, -1, -1 };   // rows per worker kind of the last logged plan
        wall_window   wall_split, wall_out;     // walls at the share auto settled on (wall_rows), and with the NPU out
        wall_window   wall_whole;               // and with the NPU on every row (its tries, or while it was measured faster)
        int64_t       wall_rows   = -1;
        outcome_spell kept_out;                 // the NPU out, measured slower (report_outcome)
        outcome_spell whole_won;                // the NPU on every row, measured faster than the split
        // A share one block of the NPU's either side of npu_cur, measured against it (near_npu_rows): which (-1: none
        // now), its walls, the side to try next, the back-off between tries; moved there, it is held for a while.
        // Within a process: none of it is kept in the state file.
        int64_t       near_rows   = -1;
        wall_window   wall_near;
        int           near_side   = -1;         // 0: fewer rows, 1: more (-1: the side the models rank better)
        int64_t       near_skipped = 0, near_gap = 0;
        outcome_spell near_won;
    };

    // What the workers beside the NPU (the CPU, or the CPU and a GPU) take for the rows it leaves them: a fixed part
    // per multiply and a time per row (rest_beside)
    struct rest_cost {
        double fixed = 0.0, per_row = -1.0;
        double fixed_alone = 0.0;   // the fixed part with the NPU out too (a GPU's submit and copies)
        bool   known() const { return per_row > 0.0; }
        double time(int64_t rows) const { return rows > 0 ? fixed + (double) rows * per_row : 0.0; }
    };

    // auto: the decision (best_npu_rows, then settle's hysteresis), unless a probe must measure something first
    // (`cpu_sliced`: the CPU's rows are cut into slices beside the NPU, plan_worker::sliced)
    int64_t auto_npu_rows(shape_state & st, int64_t n_rows, int64_t step, int64_t probe, bool has_gpu, bool has_cpu,
                          bool cpu_sliced, bool ready, plan_reason & why);
    double  makespan(const shape_state & st, int64_t n, int64_t r, const rest_cost & p, double p_alone) const;
    // the best NPU rows by the models; `part`: the best short of every row (and of none)
    int64_t best_npu_rows(const shape_state & st, int64_t n, int64_t step, const rest_cost & p, double p_alone,
                          bool part = false) const;
    void    settle(shape_state & st, int64_t n, int64_t step, int64_t best, const rest_cost & p, double p_alone);
    // auto: a neighbouring share measured against the one settled on (report_outcome's walls), and moved to if faster
    int64_t near_npu_rows(shape_state & st, int64_t n, int64_t step, int64_t r, const rest_cost & p, double p_alone,
                          plan_reason & why);
    int64_t measured_npu_rows(shape_state & st, int64_t n, int64_t step, int64_t probe, bool has_gpu, bool has_cpu,
                              bool cpu_sliced, bool ready, const rest_cost & p, double p_alone, plan_reason & why);
    // the NPU's rows for a measurement of another size than `r` (-1: none far enough away)
    int64_t other_size_rows(shape_state & st, int64_t n, int64_t step, int64_t r);
    int64_t alone_every_for(const shape_state & st, int64_t n, int64_t r, const rest_cost & p, double p_alone) const;
    // a part measured while the NPU takes every row: whether it can be faster at all
    bool    part_may_win(const shape_state & st, int64_t n, int64_t part, const rest_cost & p, double p_alone) const;
    int64_t gpu_rows_of(shape_state & st, int64_t left, int64_t align, bool has_cpu);
    // planner_gpu.cpp: the GPU's predicted time for `rows` (its fixed part and rows), what a report teaches its models,
    // and the fixed part of the GPU and the CPU sharing the rows beside the NPU
    double  gpu_time(const shape_state & st, int64_t rows) const;
    double  gpu_fixed_part(const shape_state & st) const;
    void    report_gpu(shape_state & st, int64_t rows, double seconds, double fixed_s);
    double  gpu_rest_fixed(const shape_state & st, bool has_cpu) const;
    double  rest_sec_per_row(const shape_state & st, bool has_gpu, bool has_cpu, bool npu_along) const;
    rest_cost rest_beside(const shape_state & st, bool has_gpu, bool has_cpu, bool cpu_sliced) const;
    // The CPU's model for a plan with or without the NPU's rows (and with or without a GPU worker)
    const cost_model & cpu_model(const shape_state & st, bool has_gpu, bool npu_along) const;
    // A young shape starts from what the other shapes learned of the machine, scaled to its size: the CPU's time
    // per FLOP (alone and next to the NPU, of the same weight type), the NPU's time per launch and fixed part against
    // its worker's hint, and the NPU whole against its model (medians over the shapes that measured them).
    void    seed_from_others(const shape_key & key, shape_state & st) const;
    double  npu_work(const shape_state & st, int64_t rows) const;
    double  npu_time(const shape_state & st, int64_t rows) const;   // predicted; 0 for no rows
    // what the multiply waits for the NPU's part from its turn: npu_time less the head start of a multiply begun ahead
    double  npu_wait(const shape_state & st, int64_t rows) const;
    std::string plan_line(const shape_key & key, const shape_state & st, const int64_t rows[3], plan_reason why,
                          const bool has[3]) const;

    planner_options opts;
    mutable std::mutex mtx;
    std::unordered_map<shape_key, shape_state, shape_key_hash> shapes;
    int64_t n_plans = 0, n_reprobes = 0, n_explores = 0, n_alone = 0, n_kept_out = 0, n_whole_won = 0, n_near = 0, n_near_won = 0;
};

}  // namespace xdna
