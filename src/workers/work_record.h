// The record of a worker's part of a multiply (work_record) and the records added up (work_totals): what every reader
// of a run's outcome reads, so that the report, the timeline and the planner count it one way.
#pragma once

#include "ggml.h"

#include <cstdint>
#include <string>

namespace xdna {

// Output rows [begin, end) of a multiply (for MUL_MAT_ID: the same rows of every expert).
struct row_range {
    int64_t begin = 0;
    int64_t end   = 0;

    int64_t size() const { return end - begin; }
    bool empty() const { return end <= begin; }
};

enum class worker_kind { npu, gpu, cpu };

const char * worker_kind_name(worker_kind kind);

// Why a worker's part of a multiply failed. The status says what the engine does (ABORTED: the graph stops, as the
// user asked; FAILED: the CPU redoes the rows); the reason says why, in the one log line.
enum class work_failure {
    none,
    aborted,              // the abort callback asked to stop
    cpu_backend,          // the private CPU backend failed (or could not be created)
    misaligned_rows,      // rows off a repacked weight's 8-row groups, which would give garbage
    no_kernel,            // no NPU kernel for this weight or shape
    weight_conversion,    // the weight could not be converted for the device
    device_memory,        // no device buffer or pinned memory to be had
    device_run,           // the device failed to launch, run or finish in time
    nonfinite_output,     // NaN, Inf or impossible values in the device's output
    device_unavailable,   // the device could not be opened, or its worker's thread is not running
    bad_routing,          // a MUL_MAT_ID's expert id out of range
    unsupported,          // the device does not support this multiply
};

const char * work_failure_name(work_failure f);

// One worker's part of one multiply, as it went: the one record of a run. The worker fills in how it went (its times,
// a failure); the engine (compute.cpp) fills in whose part it was (kind, rows, nodes) and the device's busy time,
// then hands the same record to the report's totals (work_totals), the timeline (the multiply's event) and the
// planner's learning (split_planner::learn).
struct work_record {
    ggml_status  status  = GGML_STATUS_SUCCESS;
    work_failure reason  = work_failure::none;
    std::string  detail;         // the particulars, for the log line (the device's own message); may be empty
    double       seconds = 0.0;  // wall time of the worker's own part
    // the part of `seconds` that does not grow with the rows (the NPU: its set-up before the first launch and its
    // last result after the last run), measured apart so that the planner need not guess it; < 0: not measured
    double       fixed_seconds = -1.0;
    // the part of `seconds` spent on work done once for good (converting a weight into the NPU's cache): a cost of
    // the first use, not of the multiply, which the planner must not learn from
    double       once_seconds = 0.0;
    // Begun ahead of its turn (multiply::ahead): the part of `seconds` before the multiply's turn, which it no longer
    // waits for (the NPU: from its start to its release); < 0: run at its turn
    double       head_seconds = -1.0;
    // Driven by the CPU worker's team (worker::begin_driven): the part of the team's time spent on this worker's host
    // work between its own slices of rows, which the CPU's time then includes and must not be learned as its own
    double       team_seconds = 0.0;
    int64_t      team_results = -1;   // driven: the results the team took between its slices (-1: not driven)

    // filled by the engine
    worker_kind  kind = worker_kind::cpu;
    row_range    rows;               // of the multiply's rows (of each of its nodes: a pair's two results)
    int          nodes = 1;          // the multiply's nodes (2: a pair, multiply::twin)
    double       busy_seconds = -1.0;   // the worker's device busy meanwhile, when it can tell (the NPU's runs)

    bool ok() const { return status == GGML_STATUS_SUCCESS; }
    std::string why() const;   // "reason: detail", for the log
    // the results' rows it computed: its rows of every node, the one way rows are counted
    int64_t result_rows() const { return rows.size() * nodes; }

    static work_record failed(work_failure reason, std::string detail = {}, double seconds = 0.0) {
        work_record r;
        r.status  = reason == work_failure::aborted ? GGML_STATUS_ABORTED : GGML_STATUS_FAILED;
        r.reason  = reason;
        r.detail  = std::move(detail);
        r.seconds = seconds;
        return r;
    }
    // a record as the engine completes it, for tests and tools that teach a planner without workers
    static work_record measured(worker_kind kind, int64_t rows, double seconds, double fixed_seconds = -1.0) {
        work_record r;
        r.kind          = kind;
        r.rows          = { 0, rows };
        r.seconds       = seconds;
        r.fixed_seconds = fixed_seconds;
        return r;
    }
};

// The records of a process's (or a backend instance's) runs added up per worker kind, for the report's line.
class work_totals {
  public:
    void add(const work_record & r);
    // "npu: R rows, S s (device busy B%) | ... | cpu: ...": the result rows each kind computed (failed runs' rows left
    // out: the CPU redid them) and the time it took; "no rows" before any
    std::string line() const;
    int64_t rows(worker_kind k) const { return sums[(int) k].rows; }
    int64_t runs(worker_kind k) const { return sums[(int) k].runs; }
    int64_t failures(worker_kind k) const { return sums[(int) k].failures; }

  private:
    struct sum {
        int64_t rows = 0, runs = 0, failures = 0;
        double  seconds = 0.0;
        double  busy = 0.0;                     // its device busy meanwhile, where the worker can tell
        int64_t driven = 0, team_results = 0;   // runs the CPU worker's team drove, and results it took meanwhile
        double  team_seconds = 0.0;             // the team's time on those results (out of the CPU's own)
    };
    sum sums[3];
};

}  // namespace xdna
