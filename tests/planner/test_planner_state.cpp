// What the auto split learned, kept as text between processes (split_planner::save_state / load_state, and the file
// backend/planner_file.cpp keeps it in): a planner
// that reads another's text plans as the other would have, without probing again; a text it did not write changes
// nothing; and a model's state survives the trip exactly.
#include "backend/planner_file.h"
#include "sim_workers.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace xdna_test;

namespace {

// 30 multiplies of one shape next to an NPU 3x the CPU's speed, learned into `p`; the simulation (its key)
simulation learned_fast_npu(split_planner & p) {
    sim_worker npu = sim_npu(3.0, true, true);
    npu.reports_fixed = true;
    simulation a(p, { npu, sim_cpu() }, 1024, 3072, 0.05, 1);
    for (int i = 0; i < 30; ++i) a.step();
    return a;
}

}  // namespace

TEST(cost_model_state, a_model_saved_and_loaded_predicts_the_same) {
    cost_model m;
    m.set_prior(1e-3, 2e-6, true);
    for (int i = 0; i < 20; ++i) m.add(i % 2 ? 1000 : 3000, (i % 2 ? 1000 : 3000) * 2e-6 + 1e-3 + 1e-5 * (i % 3));
    cost_model back;
    ASSERT_TRUE(back.load(m.save()));
    EXPECT_EQ(back.samples(), m.samples());
    EXPECT_DOUBLE_EQ(back.intercept(), m.intercept());
    EXPECT_DOUBLE_EQ(back.slope(), m.slope());
    m.add(2000, 5.1e-3);
    back.add(2000, 5.1e-3);
    EXPECT_DOUBLE_EQ(back.slope(), m.slope()) << "the same window: the next reading moves both alike";
    EXPECT_EQ(back.save(), m.save());
}

TEST(cost_model_state, lines_it_did_not_write_are_refused) {
    cost_model m;
    m.add(1000, 5e-3);
    const std::string good = m.save();
    for (const std::string & bad : { std::string(""), std::string("1 2 3"), good + " 7", good.substr(0, good.size() - 2) + "x",
                                     std::string("0 0 0 0 0 1 1 1000 -5"), std::string("0 0 0 0 0 1 99 1 1") }) {
        cost_model c;
        c.add(1000, 1e-3);
        EXPECT_FALSE(c.load(bad)) << "'" << bad << "'";
        EXPECT_DOUBLE_EQ(c.slope(), 1e-6) << "a refused line leaves the model as it was";
    }
}

TEST(planner_state, a_planner_that_reads_the_state_plans_as_the_one_that_wrote_it) {
    sim_worker fast = sim_npu(3.0, true, true), slow = sim_npu(0.2, true, true);
    fast.reports_fixed = slow.reports_fixed = true;
    fast.wide_rows  = 1024;   // and wider blocks, whose cost is part of the NPU's unit of work
    fast.wide_units = 1.9;
    split_planner first{ planner_options{} };
    simulation a(first, { fast, sim_cpu() }, 1024, 3072, 0.05, 1), b(first, { slow, sim_cpu() }, 3072, 1024, 0.05, 2);
    for (int i = 0; i < 60; ++i) {   // two shapes learned: the NPU 3x the CPU on one, 1/5x on the other
        a.step();
        b.step();
    }
    const std::string text = first.save_state();
    ASSERT_FALSE(text.empty());

    split_planner second{ planner_options{} };
    std::string why;
    EXPECT_EQ(second.load_state(text, &why), 2u) << why;
    EXPECT_EQ(second.npu_rows_of(a.key), first.npu_rows_of(a.key));
    EXPECT_EQ(second.npu_rows_of(b.key), first.npu_rows_of(b.key));
    EXPECT_EQ(second.save_state(), text) << "what was read is what was written";

    // the next process starts at the decision: from its first multiply, no probe, no CPU-alone measurement, and no
    // try of the NPU on every row (its time is kept)
    simulation a2(second, { fast, sim_cpu() }, 1024, 3072, 0.05, 3), b2(second, { slow, sim_cpu() }, 3072, 1024, 0.05, 4);
    int wholes = 0;
    for (int i = 0; i < 10; ++i) {
        const int64_t got = a2.step().npu_rows;
        wholes += got == a.key.rows;
        EXPECT_EQ(got, first.npu_rows_of(a.key)) << "multiply " << i + 1;
        EXPECT_EQ(b2.step().npu_rows, first.npu_rows_of(b.key)) << "multiply " << i + 1;
    }
    EXPECT_EQ(wholes, 0);
}

// A shape's two flags (its weights converted per call, begun ahead) make four shapes, each kept apart through the trip.
TEST(planner_state, the_flags_of_a_shape_keep_it_apart_through_the_trip) {
    split_planner first{ planner_options{} };
    shape_key base;
    base.op = GGML_OP_MUL_MAT; base.type = GGML_TYPE_Q4_0; base.k = 1024; base.rows = 1024; base.tokens = 512; base.nodes = 2;
    double seconds = 1e-3;
    for (bool per_call : { false, true }) {
        for (bool ahead : { false, true }) {
            shape_key k = base;
            k.per_call = per_call;
            k.ahead    = ahead;
            work_record r;
            r.kind    = worker_kind::cpu;
            r.rows    = { 0, 512 };
            r.seconds = seconds += 1e-3;   // each shape its own speed
            first.learn(k, r);
        }
    }
    const std::string text = first.save_state();
    split_planner second{ planner_options{} };
    std::string why;
    EXPECT_EQ(second.load_state(text, &why), 4u) << why;
    EXPECT_EQ(second.save_state(), text) << "what was read is what was written";
}

// A multiply begun ahead keeps its head start (npu_head, the eighth model) through the trip. A file of before the head
// start was learned apart (seven models) still loads: its shapes at their turn as they were, those begun ahead left
// out, as their NPU model there was another time (from the multiply's turn on), learned afresh.
TEST(planner_state, the_head_start_is_kept_and_an_older_file_still_loads) {
    sim_worker npu = sim_npu_8700g();
    npu.reports_fixed = true;
    npu.head_s = 0.5 * npu.time(1024);
    split_planner first{ planner_options{} };
    simulation at_turn(first, { sim_npu_8700g(), sim_cpu(2e-6, 8) }, 1024, 1024, 0.05, 1);
    simulation ahead(first, { npu, sim_cpu(2e-6, 8) }, 1024, 1024, 0.05, 2);
    ahead.key.ahead = true;
    for (int i = 0; i < 20; ++i) { at_turn.step(); ahead.step(); }
    const std::string text = first.save_state();
    split_planner second{ planner_options{} };
    std::string why;
    ASSERT_EQ(second.load_state(text, &why), 2u) << why;
    EXPECT_EQ(second.save_state(), text) << "what was read is what was written";
    // the same text as a file of before: each line's last model (npu_head) taken off
    std::string older, line;
    size_t lines = 0, ahead_lines = 0;
    for (std::istringstream in(text); std::getline(in, line); ++lines) {
        const size_t bar = line.rfind(" | ");
        ASSERT_NE(bar, std::string::npos);
        if (line.substr(bar + 3) != cost_model().save()) ahead_lines++;   // only the shape begun ahead has one
        older += line.substr(0, bar) + "\n";
    }
    EXPECT_EQ(lines, 2u);
    EXPECT_EQ(ahead_lines, 1u);
    split_planner third{ planner_options{} };
    ASSERT_EQ(third.load_state(older, &why), 1u) << why;
    EXPECT_EQ(third.npu_rows_of(at_turn.key), first.npu_rows_of(at_turn.key));
    EXPECT_EQ(third.npu_rows_of(ahead.key), -1) << "the shape begun ahead is learned afresh";
}

// A decision to give the NPU every row is not kept (split_planner::save_state): the shape is written as undecided, so
// that the next process decides it again from its models at its first multiply (no probe), among them the NPU's
// measured time on every row, which is kept (npu_whole, and its tries: the whole is not tried again).
TEST(planner_state, the_npu_on_every_row_is_decided_again_in_the_next_process) {
    sim_worker npu = sim_npu(30.0, true, true);   // far faster than the CPU: every row
    npu.reports_fixed = true;
    split_planner first{ planner_options{} };
    simulation a(first, { npu, sim_cpu() }, 1024, 3072, 0.05, 1);
    for (int i = 0; i < 60; ++i) a.step();
    ASSERT_EQ(first.npu_rows_of(a.key), a.key.rows);
    const std::string text = first.save_state();
    split_planner second{ planner_options{} };
    ASSERT_EQ(second.load_state(text, nullptr), 1u);
    EXPECT_EQ(second.npu_rows_of(a.key), -1) << "every row kept as the decision";
    EXPECT_EQ(second.save_state(), text);
    std::vector<std::string> fields;   // the shape's line: its head, then its models (planner_state.cpp)
    for (size_t at = 0, bar;; at = bar + 3) {
        bar = text.find(" | ", at);
        fields.push_back(text.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
        if (bar == std::string::npos) break;
    }
    ASSERT_EQ(fields.size(), 9u) << text;
    EXPECT_NE(fields[7], cost_model().save()) << "the whole's time kept (npu_whole, the seventh model)";
    simulation a2(second, { npu, sim_cpu() }, 1024, 3072, 0.05, 2);
    const sim_result r = a2.step();
    EXPECT_FALSE(r.reprobe) << "probed again at " << r.npu_rows << " rows";
    EXPECT_EQ(r.npu_rows, a.key.rows) << "the models, which were kept, choose every row again";
}

// The NPU's time on every row is kept with its tries: a shape whose NPU takes most rows tries the whole (twice) in
// the first process, and not again in the next, which reads the first one's state (left out, every process tried it
// again: on the 2-CPU VM at -t 1, the NPU emulated at 350 GFLOP/s, in llama-bench's timed prompts, where the whole is
// far slower than the split).
TEST(planner_state, the_npu_on_every_row_is_tried_in_the_first_process_only) {
    sim_worker npu = sim_npu(1.4, true, true);   // a little faster than the CPU: most rows, not all
    npu.reports_fixed = true;
    sim_worker cpu = sim_cpu();
    cpu.sliced = true;   // the CPU's team drives the NPU: the whole is tried on half the rows or more
    split_planner first{ planner_options{} };
    simulation a(first, { npu, cpu }, 1024, 3072, 0.0, 1);
    int wholes = 0;
    for (int i = 0; i < 60; ++i) wholes += a.step().npu_rows == a.key.rows;
    const int64_t settled = first.npu_rows_of(a.key);
    ASSERT_GE(settled * 2, a.key.rows) << "the NPU on most rows";
    ASSERT_LT(settled, a.key.rows);
    ASSERT_GE(wholes, 1) << "the first process tries the whole";

    split_planner second{ planner_options{} };
    ASSERT_EQ(second.load_state(first.save_state(), nullptr), 1u);
    simulation a2(second, { npu, cpu }, 1024, 3072, 0.0, 2);
    for (int i = 0; i < 60; ++i) {
        EXPECT_NE(a2.step().npu_rows, a.key.rows) << "the whole tried again at multiply " << i + 1;
    }
    EXPECT_EQ(second.npu_rows_of(a.key), settled);
}

TEST(planner_state, a_text_it_did_not_write_changes_nothing) {
    split_planner p{ planner_options{} };
    const simulation a = learned_fast_npu(p);
    const std::string good = p.save_state();
    for (const std::string & bad : { std::string("hello\n"), good + "shape 1 2 3\n", "x" + good,
                                     good.substr(0, good.size() / 2) + "\n" }) {
        split_planner q{ planner_options{} };
        std::string why;
        EXPECT_EQ(q.load_state(bad, &why), 0u);
        EXPECT_FALSE(why.empty());
        EXPECT_EQ(q.npu_rows_of(a.key), -1) << "nothing learned from a text it did not write";
    }
}

// The file (backend/planner_file.cpp): read back under the identity it was written with; under another one (another
// machine, build, NPU, kernel set or thread count), or when it is not a state file at all, nothing is read.
TEST(planner_file, read_only_under_the_identity_it_was_written_with) {
    split_planner p{ planner_options{} };
    const simulation a = learned_fast_npu(p);
    const std::string path = testing::TempDir() + "planner-state-test.txt";
    std::remove(path.c_str());

    split_planner none{ planner_options{} };
    planner_file_read(none, path, "machine A");   // no file yet: nothing, and no error
    EXPECT_EQ(none.npu_rows_of(a.key), -1);

    planner_file_write(p, path, "machine A");
    split_planner same{ planner_options{} }, other{ planner_options{} };
    planner_file_read(same, path, "machine A");
    planner_file_read(other, path, "machine B");
    EXPECT_EQ(same.npu_rows_of(a.key), p.npu_rows_of(a.key));
    EXPECT_EQ(same.save_state(), p.save_state());
    EXPECT_EQ(other.npu_rows_of(a.key), -1) << "written under another identity: not read";

    {
        std::ofstream f(path);
        f << "not a planner state\nmachine A\n" << p.save_state();
    }
    split_planner bad{ planner_options{} };
    planner_file_read(bad, path, "machine A");
    EXPECT_EQ(bad.npu_rows_of(a.key), -1) << "not a state file: not read";
    std::remove(path.c_str());
}
