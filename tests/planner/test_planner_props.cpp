// Properties of every plan, whatever was learned: rows laid out NPU, GPU, CPU; every row to exactly one worker;
// boundaries on each worker's alignment and the NPU on whole steps; plus the decision log, the summary, bad input and
// sharing one planner between threads.
#include "sim_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace xdna_test;

namespace {

work_record with_ok(work_record r, bool ok) {
    if (!ok) r.status = GGML_STATUS_FAILED;
    return r;
}

// every row exactly once, in the order NPU, GPU, CPU; each boundary a multiple of the aligns of both workers that
// meet there, or the end; the NPU's rows a multiple of the step (or all rows)
void check_plan(const std::vector<plan_worker> & ws, const std::vector<row_range> & rs, int64_t n, int64_t step,
                const std::string & ctx) {
    ASSERT_EQ(ws.size(), rs.size()) << ctx;
    int64_t at = 0;
    for (worker_kind k : { worker_kind::npu, worker_kind::gpu, worker_kind::cpu }) {
        for (size_t i = 0; i < ws.size(); ++i) {
            if (ws[i].kind != k) continue;
            ASSERT_EQ(rs[i].begin, at) << ctx << " " << worker_kind_name(k);
            ASSERT_GE(rs[i].end, rs[i].begin) << ctx;
            if (!rs[i].empty()) {
                ASSERT_TRUE(rs[i].begin % ws[i].align == 0) << ctx << " " << worker_kind_name(k) << " starts off its alignment";
                ASSERT_TRUE(rs[i].end % ws[i].align == 0 || rs[i].end == n) << ctx << " " << worker_kind_name(k) << " ends off its alignment";
            }
            if (k == worker_kind::npu) { ASSERT_TRUE(rs[i].size() % step == 0 || rs[i].end == n) << ctx << " NPU not on whole steps"; }
            at = rs[i].end;
        }
    }
    ASSERT_EQ(at, n) << ctx << ": rows not covered";
}

}  // namespace

TEST(planner_props, alignment_and_coverage_over_random_shapes) {
    std::mt19937_64 rng(2024);
    const int64_t aligns[] = { 1, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };
    auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    int checked = 0;
    for (int round = 0; round < 300; ++round) {
        planner_options o;
        o.gpu_npu_min_gflop = 0.0;
        const int mode = round % 3;   // auto, fixed share, auto with a tiny step
        if (mode == 1) o.npu_share = std::uniform_real_distribution<double>(0.0, 1.2)(rng);
        if (mode == 2) o.npu_step = aligns[pick(0, 10)];
        split_planner p(o);
        // a random subset of workers, the CPU usually there, in a random order
        std::vector<plan_worker> ws;
        for (worker_kind k : { worker_kind::npu, worker_kind::gpu, worker_kind::cpu }) {
            if (pick(0, 3) == 0 && !(k == worker_kind::cpu && ws.empty())) continue;
            plan_worker w{ k, aligns[pick(0, 10)] };
            if (k == worker_kind::npu && pick(0, 1)) w.cost = { 1e-4, 1e-3, aligns[pick(5, 10)], pick(1, 4) };
            ws.push_back(w);
        }
        std::shuffle(ws.begin(), ws.end(), rng);
        int64_t step = o.npu_step;
        for (const plan_worker & w : ws) step = std::lcm(step, w.align);
        for (int s = 0; s < 4; ++s) {
            shape_key key;
            key.k = pick(1, 8192);
            key.rows = pick(1, 40000);
            key.tokens = pick(32, 512);
            const double speed[3] = { std::exp(std::uniform_real_distribution<double>(-3, 3)(rng)), 1.0,
                                      std::exp(std::uniform_real_distribution<double>(-2, 2)(rng)) };
            for (int call = 0; call < 12; ++call) {
                const std::vector<row_range> rs = p.plan(key, key.rows, ws);
                check_plan(ws, rs, key.rows, step, "round " + std::to_string(round) + " rows " + std::to_string(key.rows));
                if (HasFatalFailure()) return;
                checked++;
                for (size_t i = 0; i < ws.size(); ++i) {
                    // random times, a fixed cost and now and then a wild one
                    const double t = (1e-4 + 1e-6 * (double) rs[i].size() * speed[(int) ws[i].kind]) * (pick(0, 9) ? 1.0 : 50.0);
                    p.learn(key, with_ok(work_record::measured(ws[i].kind, rs[i].size(), t), pick(0, 20) != 0));
                }
            }
        }
    }
    EXPECT_EQ(checked, 300 * 4 * 12);
}

TEST(planner_props, workers_that_are_alone_or_duplicated) {
    split_planner p;
    shape_key key;
    key.k = 1024; key.rows = 1000; key.tokens = 64;
    auto r = p.plan(key, 1000, { { worker_kind::npu, 1 } });
    EXPECT_EQ(r[0].size(), 1000) << "a lone NPU takes every row";
    r = p.plan(key, 1000, { { worker_kind::gpu, 1 } });
    EXPECT_EQ(r[0].size(), 1000);
    r = p.plan(key, 1000, { { worker_kind::cpu, 4 }, { worker_kind::cpu, 4 } });
    EXPECT_EQ(r[0].size(), 1000);
    EXPECT_EQ(r[1].size(), 0) << "a second worker of a kind gets nothing";
    r = p.plan(key, 0, { { worker_kind::npu, 1 }, { worker_kind::cpu, 4 } });
    EXPECT_TRUE(r[0].empty() && r[1].empty()) << "no rows: nothing to do";
    EXPECT_TRUE(p.plan(key, 1000, {}).empty());
}

TEST(planner_props, shapes_below_one_step_go_to_one_worker_whole) {
    simulation sim({}, { sim_npu(1.5, true, true), sim_cpu() }, 200);   // fewer rows than one NPU step
    for (int i = 0; i < 40; ++i) {
        const sim_result r = sim.step();
        EXPECT_TRUE(r.npu_rows == 0 || r.npu_rows == 200) << r.npu_rows;
    }
}

TEST(planner_props, decisions_are_logged_when_they_change_and_not_for_re_probes) {
    std::vector<std::string> lines;
    planner_options o;
    o.log = [&](const std::string & l) { lines.push_back(l); };
    simulation sim(o, { sim_npu(0.02, true, true), sim_cpu() }, 3072);   // drops the NPU, then re-probes it
    int64_t distinct = 0, reprobes = 0;
    std::vector<int64_t> prev_decision;
    for (int i = 0; i < 100; ++i) {
        const sim_result r = sim.step();
        const bool reprobe = !prev_decision.empty() && prev_decision[0] == 0 && r.npu_rows > 0;
        if (reprobe) { reprobes++; continue; }
        std::vector<int64_t> d = { r.ranges[0].size(), r.ranges[1].size() };
        if (d != prev_decision) distinct++;
        prev_decision = d;
    }
    EXPECT_GT(reprobes, 0);
    EXPECT_EQ((int64_t) lines.size(), distinct);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines[0].find("split MUL_MAT q4_0 K=1024 rows=3072 tokens=512: npu 512 | cpu 2560 rows (probe"), std::string::npos) << lines[0];
    EXPECT_NE(lines.back().find("npu 0 | cpu 3072 rows (auto; cpu ~"), std::string::npos) << lines.back();

    lines.clear();
    planner_options f;
    f.npu_share = 0.5;
    f.log = o.log;
    simulation fixed(f, { sim_npu(1.0, true, true), sim_cpu() }, 3072);
    for (int i = 0; i < 10; ++i) fixed.step();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("npu 1536 | cpu 1536 rows (fixed NPU share 0.5"), std::string::npos) << lines[0];
}

TEST(planner_props, summary_counts_plans_and_shapes) {
    planner_options o;
    split_planner p(o);
    shape_key a, b;
    a.k = 1024; a.rows = 3072; a.tokens = 512;
    b = a; b.rows = 1024;
    p.learn(a, work_record::measured(worker_kind::npu, 1024, 0.5));
    p.learn(a, work_record::measured(worker_kind::cpu, 2048, 0.25));
    p.learn(b, work_record::measured(worker_kind::cpu, 1024, 0.125));
    p.learn(b, with_ok(work_record::measured(worker_kind::npu, 256, 9.0), false));   // failed: teaches nothing
    p.plan(a, 3072, { { worker_kind::npu, 1 }, { worker_kind::cpu, 4 } });
    const std::string s = p.summary();
    EXPECT_NE(s.find("planner (auto split): 1 multiplies over 2 shapes"), std::string::npos) << s;
    EXPECT_EQ(s.find("rows"), std::string::npos) << "what the workers computed is the engine's line: " << s;
    const std::vector<std::string> shapes = p.shape_report();
    ASSERT_EQ(shapes.size(), 2u);
    EXPECT_NE(shapes[1].find("rows=3072"), std::string::npos) << shapes[1];
    // learned before any plan gave the NPU rows: what the CPU does alone
    EXPECT_NE(shapes[1].find("cpu alone 0.0 ns + 122.1 us/row"), std::string::npos) << shapes[1];
    EXPECT_EQ(shapes[0].find("npu "), std::string::npos) << "a failed run taught the NPU's model: " << shapes[0];
}

TEST(planner_props, bad_records_are_ignored) {
    split_planner p;
    shape_key key;
    key.k = 1024; key.rows = 3072; key.tokens = 512;
    const std::vector<plan_worker> ws = { { worker_kind::npu, 1 }, { worker_kind::cpu, 4 } };
    p.plan(key, 3072, ws);
    p.learn(key, work_record::measured(worker_kind::cpu, 2816, 14e-3));
    p.learn(key, work_record::measured(worker_kind::npu, 256, 1e-3));
    const std::vector<row_range> before = p.plan(key, 3072, ws);
    for (double bad : { -1.0, 0.0, std::nan(""), HUGE_VAL }) {
        p.learn(key, work_record::measured(worker_kind::npu, 256, bad));
        p.learn(key, work_record::measured(worker_kind::cpu, 2816, bad));
    }
    p.learn(key, work_record::measured(worker_kind::cpu, -5, 1.0));
    p.learn(key, work_record::measured((worker_kind) 7, 100, 1.0));
    const std::vector<row_range> after = p.plan(key, 3072, ws);
    EXPECT_EQ(after[0].size(), before[0].size());
}

TEST(planner_props, one_planner_shared_by_threads) {
    // several backend instances plan and report on the same and on their own shapes at once (run under TSan too)
    split_planner p;
    std::atomic<int> bad{ 0 };
    auto body = [&](int id) {
        shape_key shared, own;
        shared.k = 1024; shared.rows = 3072; shared.tokens = 512;
        own = shared; own.rows = 1024 * (id + 1) + 512;
        const std::vector<plan_worker> ws = { { worker_kind::npu, 1 }, { worker_kind::gpu, 32 }, { worker_kind::cpu, 8 } };
        for (int i = 0; i < 2000; ++i) {
            const shape_key & key = i % 2 ? shared : own;
            const std::vector<row_range> rs = p.plan(key, key.rows, ws);
            int64_t at = 0;
            for (const row_range & r : rs) { if (r.begin != at) bad++; at = r.end; }
            if (at != key.rows) bad++;
            for (size_t w = 0; w < ws.size(); ++w) {
                p.learn(key, work_record::measured(ws[w].kind, rs[w].size(), 1e-5 + 1e-6 * (double) rs[w].size() * (w + 1)));
            }
            if (i % 500 == 0) (void) p.summary();
        }
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) ts.emplace_back(body, t);
    for (std::thread & t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_NE(p.summary().find("8000 multiplies over 5 shapes"), std::string::npos) << p.summary();
}
