// The one record of a worker's part of a multiply, added up for the report: result rows counted one way (every node
// of a pair), a failed part's time counted and its rows not, the device's busy share and the team-driven runs.
#include "workers/work_record.h"

#include <gtest/gtest.h>

using namespace xdna;

namespace {

work_record part(worker_kind kind, int64_t begin, int64_t end, double seconds, int nodes = 1) {
    work_record r;
    r.kind    = kind;
    r.rows    = { begin, end };
    r.nodes   = nodes;
    r.seconds = seconds;
    return r;
}

}  // namespace

TEST(work_totals, adds_up_result_rows_and_times_per_worker) {
    work_totals t;
    EXPECT_EQ(t.line(), "no rows");
    t.add(part(worker_kind::cpu, 1024, 3072, 0.25));
    work_record npu = part(worker_kind::npu, 0, 1024, 0.5, 2);   // a pair: 1,024 rows of each of two results
    npu.busy_seconds = 0.4;
    t.add(npu);
    work_record failed = work_record::failed(work_failure::device_run, "timed out", 9.0);
    failed.kind = worker_kind::npu;
    failed.rows = { 0, 256 };
    t.add(failed);
    EXPECT_EQ(t.rows(worker_kind::npu), 2048);
    EXPECT_EQ(t.runs(worker_kind::npu), 2);
    EXPECT_EQ(t.failures(worker_kind::npu), 1);
    EXPECT_EQ(t.rows(worker_kind::cpu), 2048);
    EXPECT_EQ(t.runs(worker_kind::gpu), 0);
    EXPECT_EQ(t.line(), "npu: 2048 rows, 9.500 s (device busy 4%) (1 runs failed, redone on the CPU) | "
                        "cpu: 2048 rows, 0.250 s");
}

TEST(work_totals, says_where_the_cpu_team_drove_a_device) {
    work_totals t;
    work_record r = part(worker_kind::npu, 0, 512, 0.002);
    r.team_results = 3;
    r.team_seconds = 0.001;
    t.add(r);
    t.add(r);
    EXPECT_NE(t.line().find("(driven by the CPU's team in 2 runs, 6 results taken between its slices in 0.002 s)"),
              std::string::npos) << t.line();
}

TEST(work_record, rows_counted_over_every_node_of_the_multiply) {
    EXPECT_EQ(part(worker_kind::cpu, 256, 768, 0.0, 2).result_rows(), 1024);
    EXPECT_EQ(part(worker_kind::cpu, 256, 768, 0.0).result_rows(), 512);
    const work_record m = work_record::measured(worker_kind::gpu, 300, 0.1, 0.01);
    EXPECT_EQ(m.rows.size(), 300);
    EXPECT_TRUE(m.ok());
    EXPECT_EQ(work_record::failed(work_failure::aborted).status, GGML_STATUS_ABORTED);
    EXPECT_EQ(work_record::failed(work_failure::no_kernel, "q5_1").why(), "no NPU kernel for this weight: q5_1");
}
