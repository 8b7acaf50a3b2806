// The auto split against simulated workers: what it learns of the NPU from the NPU's own measurements (its fixed part
// apart, its widest blocks, the silicon model's NPU, the NPU on every row), what a new shape starts from, and when the
// CPU alone is measured again.
#include "sim_checks.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace xdna_test;


// The NPU worker's host thread takes CPU time, so the CPU is slower while the NPU takes rows. A share that pays only
// against that slower CPU must not be chosen: here the NPU at 0.3x the CPU alone, the CPU 2.5x slower next to it, so
// the CPU alone is fastest (15 ms against 22 ms for the best shared split). And where the NPU is fast enough to pay
// for its cost to the CPU (3x, the CPU 1.5x slower next to it), the planner still finds the shared optimum.
TEST(planner_sim, an_npu_that_slows_the_cpu_is_judged_against_the_cpu_alone) {
    struct { const char * name; double npu_speed, slowdown; } cases[] = {
        { "npu 0.3x, cpu 2.5x slower next to it", 0.3, 2.5 },
        { "npu 3x, cpu 1.5x slower next to it", 3.0, 1.5 },
    };
    for (const auto & c : cases) {
        sim_worker cpu = sim_cpu();
        cpu.next_to_npu = c.slowdown;
        simulation sim(auto_opts(), { sim_npu(c.npu_speed, true, true), cpu }, 3072, 0.05);
        expect_converges(sim, c.name, 40);
    }
}

// The NPU worker of issue-sized shapes: a fixed part per multiply (set-up before its first launch, the last result
// after its last) of several blocks' time, which its cost hint underestimates tenfold. One block costs ~5x its share
// of the work, so a planner that learns one size sees an NPU 5x slower than it is and keeps it out (what auto did
// before the worker measured its fixed part apart). With the fixed part reported, every measurement tells both
// parts and auto reaches the optimum without exploring other sizes.
TEST(planner_sim, an_npu_that_measures_its_fixed_part_is_learned_from_one_size) {
    sim_worker npu = sim_npu(1.6, true, true);
    npu.fixed_s    = 4.0 * npu.launch_s;   // e.g. 1.5 ms of set-up against 0.37 ms per 512-row block
    npu.hint_error = 0.1;
    for (bool reports : { false, true }) {
        sim_worker n = npu;
        n.reports_fixed = reports;
        simulation sim(auto_opts(), { n, sim_cpu() }, 3072);
        const double opt = sim.optimum();
        double sum = 0.0;
        const int calls = 40;
        for (int i = 0; i < calls; ++i) sum += sim.step().makespan / opt;
        printf("[figures] fixed part %s: mean %.3f x optimum over %d calls, NPU %lld of 3072 rows\n",
               reports ? "reported" : "not reported", sum / calls, calls, (long long) sim.planner.npu_rows_of(sim.key));
        if (reports) {
            EXPECT_LT(sum / calls, 1.05);
            const int64_t c = calls_to_converge(sim, opt, 0.03);
            EXPECT_GE(c, 1) << "never within 3% of the optimum";
            EXPECT_LE(c, 1) << "left the optimum after converging";
        }
    }
}

// The NPU's blocks as its worker runs them (launch_cost::for_blocks): whole blocks of the widest size that fits,
// widest first, then the rest in the size that costs it least, the last one padded; and their cost in launches of
// the narrowest.
TEST(planner_sim, the_npu_s_rows_run_in_its_widest_blocks_first) {
    launch_cost h{ 0.0, 1e-4, 256, 2 };
    h.wide_rows[0] = 1024; h.wide_units[0] = 3.0;
    h.wide_rows[1] = 512;  h.wide_units[1] = 1.8;
    auto blocks_of = [&h](int64_t rows) {
        std::vector<int64_t> out;
        h.for_blocks(rows, [&out](int64_t r, double) { out.push_back(r); });
        return out;
    };
    EXPECT_EQ(blocks_of(1792), (std::vector<int64_t>{ 1024, 512, 256 }));
    EXPECT_EQ(blocks_of(3072), (std::vector<int64_t>{ 1024, 1024, 1024 }));
    EXPECT_EQ(blocks_of(300), (std::vector<int64_t>{ 512 }));
    EXPECT_EQ(blocks_of(1288), (std::vector<int64_t>{ 1024, 512 })) << "the rest in the size that costs it least";
    EXPECT_EQ(blocks_of(768), (std::vector<int64_t>{ 512, 256 }));
    EXPECT_TRUE(blocks_of(0).empty());
    EXPECT_DOUBLE_EQ(h.units(1792), 2 * (3.0 + 1.8 + 1.0));
    EXPECT_DOUBLE_EQ(h.units(256), 2.0);
    launch_cost other = h;
    other.wide_units[1] = 2.0;
    EXPECT_FALSE(h.same_unit(other)) << "another block's cost is another unit of work";

    // A part of 3,072 rows (the worker takes its last result alone) ends in narrower blocks; every row stays run
    h.part_of = 3072;
    EXPECT_EQ(blocks_of(2048), (std::vector<int64_t>{ 1024, 512, 256, 256 }));
    EXPECT_EQ(blocks_of(1536), (std::vector<int64_t>{ 1024, 256, 256 }));
    EXPECT_EQ(blocks_of(1792), (std::vector<int64_t>{ 1024, 512, 256 })) << "a narrowest last block stays";
    EXPECT_EQ(blocks_of(1288), (std::vector<int64_t>{ 1024, 512 })) << "a padded last block is not cut";
    EXPECT_EQ(blocks_of(3072), (std::vector<int64_t>{ 1024, 1024, 1024 })) << "every row: the CPU's threads help";
    EXPECT_DOUBLE_EQ(h.units(2048), 2 * (3.0 + 1.8 + 1.0 + 1.0));
    launch_cost whole_only = h;
    whole_only.part_of = 0;
    EXPECT_FALSE(h.same_unit(whole_only)) << "a part cut otherwise is another unit of work";
    h.wide_rows[1] = 0;   // no 512-row block: a 1,024-row one is not cut
    EXPECT_EQ(blocks_of(2048), (std::vector<int64_t>{ 1024, 1024 }));
}

// An NPU whose wide blocks cost less per row than its narrow ones (fewer launches, each with its queued gap): auto
// counts its work in those blocks and finds the best split among the narrowest block's steps.
TEST(planner_sim, an_npu_with_wider_blocks_converges_to_the_fastest_split) {
    for (double speed : { 0.6, 1.5, 4.0 }) {
        sim_worker npu = sim_npu(speed, true, true);
        npu.block_rows = 256;
        npu.launch_s   = 256 * 5e-6 / speed + 35e-6;
        npu.wide_rows  = 1024;
        npu.wide_units = (1024 * 5e-6 / speed + 35e-6) / npu.launch_s;
        npu.reports_fixed = true;
        simulation sim(auto_opts(), { npu, sim_cpu() }, 3072);
        const double opt = sim.optimum();
        const int64_t c = calls_to_converge(sim, opt, 0.03);
        printf("[figures] wide blocks, NPU %.1fx: optimum %.2f ms, within 3%% from call %lld, NPU %lld of 3072 rows\n",
               speed, opt * 1e3, (long long) c, (long long) sim.planner.npu_rows_of(sim.key));
        EXPECT_GE(c, 1) << speed << ": never within 3% of the optimum";
        EXPECT_LE(c, 8) << speed;
    }
}

// The NPU of the silicon model (the wide and the narrow tile, default and balanced power mode) beside CPUs from
// one that outruns the NPU (1 us a row of 512 tokens x 1,024: 1 TFLOP/s) to one it outruns 4x: auto finds the
// fastest split within a few calls.
TEST(planner_sim, converges_beside_the_silicon_modelled_npu) {
    for (bool wide : { true, false }) {
        for (double hz : { xdna1_clock_default_hz, xdna1_clock_balanced_hz }) {
            for (double cpu_row_s : { 1e-6, 2e-6, 5e-6, 20e-6 }) {
                sim_worker npu = sim_npu_8700g(wide, hz);
                npu.reports_fixed = true;
                simulation sim(auto_opts(), { npu, sim_cpu(cpu_row_s, 8) }, 3072);
                char name[96];
                snprintf(name, sizeof(name), "8700g %s tile, %.2f GHz, cpu %.0f us/row", wide ? "wide" : "narrow",
                         hz / 1e9, cpu_row_s * 1e6);
                expect_converges(sim, name, 8);
            }
        }
    }
}

// A multiply begun ahead (K and V at Q's end): the NPU's head start is learned apart from its time
// (work_record::head_seconds), and the split is the one whose parts end first from the multiply's turn, the NPU's being
// what is left of its time then. From a head start of a fifth of the NPU's time on every row, where the split still
// gives the CPU rows, to one longer than that time, where every row goes to the NPU and the multiply waits for next to
// nothing; the optimum is brute force over every split with the head start taken off the NPU's time.
TEST(planner_sim, a_multiply_begun_ahead_is_split_by_what_is_left_at_its_turn) {
    for (double cpu_row_s : { 1e-6, 2e-6 }) {
        for (double head_of_whole : { 0.2, 0.5, 0.8, 1.2 }) {
            sim_worker npu = sim_npu_8700g();
            npu.reports_fixed = true;
            npu.head_s = head_of_whole * npu.time(3072);
            simulation sim(auto_opts(), { npu, sim_cpu(cpu_row_s, 8) }, 3072, 0.05);
            sim.key.ahead = true;
            char name[96];
            snprintf(name, sizeof(name), "ahead %.1f of the whole, cpu %.0f us/row", head_of_whole, cpu_row_s * 1e6);
            expect_converges(sim, name, 16);
            if (head_of_whole >= 1.0) EXPECT_EQ(sim.planner.npu_rows_of(sim.key), 3072) << name;
        }
    }
}

// An NPU that is faster on every row than its model of a part says (the CPU's threads, with no rows, do its host
// work): where the model puts it close to taking everything, auto tries every row, learns that time apart, and
// settles there; where the model puts it far from it, auto does not try, and a whole that is no faster changes
// nothing. The optimum is brute force over every split, the whole's time included.
TEST(planner_sim, an_npu_faster_on_every_row_is_given_every_row) {
    struct { const char * name; double speed, whole; bool all; } cases[] = {
        { "npu 3x, 25% faster whole", 3.0, 0.75, true },
        { "npu 3x, whole no faster", 3.0, 1.0, false },
        { "npu 1x, 25% faster whole", 1.0, 0.75, false },
    };
    for (const auto & c : cases) {
        sim_worker npu = sim_npu(c.speed, true, true);
        npu.reports_fixed = true;
        npu.whole = c.whole;
        simulation sim(auto_opts(), { npu, sim_cpu() }, 3072, 0.05);
        expect_converges(sim, c.name, 40);
        EXPECT_EQ(sim.planner.npu_rows_of(sim.key) == 3072, c.all) << c.name;
    }
}

// While the NPU takes every row, a part is measured again now and then (its model may rest on cold first multiplies),
// but not where the CPU's rows of that part alone take longer than every row on the NPU: such a part cannot win,
// whatever the NPU's model says. The NPU 20x the CPU: the CPU's least share, 256 rows, takes 1.7x the NPU's whole; no
// part is measured once the shape settles. The NPU 3x the CPU (the whole 25% faster than its model says): the parts
// are measured as before.
TEST(planner_sim, a_part_that_cannot_beat_the_npu_on_every_row_is_not_measured) {
    for (const double speed : { 20.0, 3.0 }) {
        sim_worker npu = sim_npu(speed, true, true);
        npu.reports_fixed = true;
        npu.whole = 0.75;
        simulation sim(auto_opts(), { npu, sim_cpu() }, 3072, 0.05);
        int64_t parts = 0;
        for (int c = 1; c <= 200; ++c) {
            const sim_result r = sim.step();
            parts += c > 20 && r.reprobe && r.decision == 3072 && r.npu_rows > 0 && r.npu_rows < 3072;
        }
        printf("[figures] the NPU %.0fx the CPU: %lld parts measured in calls 21-200, NPU %lld of 3072 rows\n", speed,
               (long long) parts, (long long) sim.planner.npu_rows_of(sim.key));
        EXPECT_EQ(sim.planner.npu_rows_of(sim.key), 3072);
        if (speed > 10.0) EXPECT_EQ(parts, 0);
        else EXPECT_GE(parts, 2);
    }
}

// What one shape learned of the machine seeds the next: a second shape (twice the inputs and rows, so twice the CPU's
// time per row and twice the NPU's launches) starts from the first one's rates, scaled to its size, and is at its
// optimum from its first or second multiply: it does not measure the CPU alone again, and the NPU whole, which the
// seed already makes the best split, is chosen at once. The NPU 3x the CPU and 25% faster whole, the CPU 1.2x slower
// next to it: the first shape must measure all of that.
TEST(planner_sim, a_new_shape_starts_from_what_the_others_learned) {
    sim_worker npu = sim_npu(3.0, true, true);
    npu.reports_fixed = true;
    npu.whole = 0.75;
    sim_worker cpu = sim_cpu();
    cpu.next_to_npu = 1.2;
    split_planner shared(auto_opts());
    simulation first(shared, { npu, cpu }, 1024, 3072, 0.05);
    for (int i = 0; i < 40; ++i) first.step();
    ASSERT_EQ(shared.npu_rows_of(first.key), 3072) << "the first shape must have settled on the NPU whole";

    sim_worker npu2 = npu, cpu2 = cpu;
    npu2.launches_per_block = 2;   // K = 2048: two K blocks per block of rows
    npu2.launch_s = npu.launch_s;
    cpu2.row_s = 2.0 * cpu.row_s;
    simulation second(shared, { npu2, cpu2 }, 2048, 6144, 0.05, 2);
    const double opt = second.optimum();
    double worst = 0.0;
    std::vector<int> parts;   // the multiplies in which the NPU, on every row by its models' choice, measured a part
    for (int i = 0; i < 20; ++i) {
        const sim_result r = second.step();
        if (r.reprobe && r.decision == 6144 && r.npu_rows > 0 && r.npu_rows < 6144) {
            parts.push_back(i);
            continue;
        }
        if (i >= 1) worst = std::max(worst, r.makespan / opt);
    }
    printf("[figures] second shape: worst %.3f x optimum from its second multiply, NPU %lld of 6144 rows, %zu parts "
           "measured again\n", worst, (long long) shared.npu_rows_of(second.key), parts.size());
    EXPECT_LT(worst, 1.03) << "a seeded shape must not probe the CPU alone or the NPU whole again";
    // on every row by its models' choice from its first multiply, the NPU measures a part again 2 multiplies later
    // (its model of a part may rest on the first, cold ones), then 16 later
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0], 1);
    EXPECT_EQ(parts[1], parts[0] + 16);
    EXPECT_EQ(shared.npu_rows_of(second.key), 6144);
}

// The first prompt's measurements can be far off: at -t 16 of 16 cores a weight converted for the NPU beside the CPU's
// part made it up to 20x slow, and the CPU alone is measured in the first multiplies, then seldom. Here every CPU
// reading of the first 12 multiplies is 10x slow, and the CPU alone is the optimum (the NPU at half the CPU's speed,
// the CPU 2x slower next to it). Without measuring the CPU alone again, auto would keep the NPU for good on the strength
// of those readings; it measures it again after `alone_every` multiplies, a second reading confirms at once, and the
// split is the optimum from there on.
TEST(planner_sim, a_cpu_measured_slow_at_the_start_is_measured_again) {
    sim_worker cpu = sim_cpu();
    cpu.next_to_npu = 2.0;
    sim_worker npu = sim_npu(0.5, true, true);
    npu.reports_fixed = true;
    simulation sim(auto_opts(), { npu, cpu }, 3072, 0.05);
    sim.outlier = [](int64_t call, worker_kind k) { return call <= 12 && k == worker_kind::cpu ? 10.0 : 1.0; };
    const double opt = sim.optimum();
    const int64_t c = calls_to_converge(sim, opt, 0.03, 300);
    printf("[figures] CPU 10x slow for 12 multiplies: at the optimum (the CPU alone) from call %lld, NPU %lld of 3072 rows\n",
           (long long) c, (long long) sim.planner.npu_rows_of(sim.key));
    EXPECT_GE(c, 1) << "never within 3% of the optimum";
    EXPECT_LE(c, planner_options{}.alone_every + 8);
    EXPECT_EQ(sim.planner.npu_rows_of(sim.key), 0);
}

// The CPU alone is measured again now and then while the NPU takes rows, at a cost: the CPU alone slower than the
// split. Where it is far slower (the NPU 4x the CPU on every row: a CPU-alone multiply costs 3x a split's), it is
// measured seldom enough to keep that under alone_cost (1%) of the shape's time; where it is close (the NPU at 0.3x
// the CPU's speed, on a quarter of the rows), every alone_every multiplies, doubling, as before (alone_cost 0 is the
// rule before). Counted over 600 multiplies after the first 20.
TEST(planner_sim, the_cpu_alone_is_measured_again_as_often_as_it_is_cheap) {
    struct { const char * name; double speed, alone_cost; int64_t min_probes, max_probes; } cases[] = {
        { "npu 4x", 4.0, 0.01, 0, 2 },
        { "npu 4x, alone_cost 0", 4.0, 0.0, 3, 4 },
        { "npu 0.3x", 0.3, 0.01, 3, 4 },
    };
    for (const auto & c : cases) {
        sim_worker npu = sim_npu(c.speed, true, true);
        npu.reports_fixed = true;
        planner_options o = auto_opts();
        o.alone_cost = c.alone_cost;
        simulation sim(o, { npu, sim_cpu() }, 3072);
        int64_t probes = 0;
        double cost = 0.0, total = 0.0;
        for (int i = 0; i < 620; ++i) {
            const sim_result r = sim.step();
            if (i < 20) continue;
            total += r.makespan;
            if (r.npu_rows == 0 && r.decision > 0) {
                probes++;
                cost += r.makespan;
            }
        }
        printf("[figures] %s: %lld CPU-alone measurements in 600 multiplies, %.2f%% of their time\n", c.name,
               (long long) probes, 100.0 * cost / total);
        EXPECT_GE(probes, c.min_probes) << c.name;
        EXPECT_LE(probes, c.max_probes) << c.name;
    }
}
