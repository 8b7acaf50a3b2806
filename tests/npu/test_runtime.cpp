// The NPU runtime on the software XDNA1: results, hardware contexts with LRU unloading, other processes holding
// contexts, and every failure surfacing as one npu_error with the runtime usable afterwards.
#include "npu_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

using namespace xdna;
using xdna_test::scoped_env;

namespace {

npu_options test_options() {
    npu_options o;
    o.manifest_path = xdna_test::manifest_path();
    o.timeout_ms = 10000;
    return o;
}

const npu_kernel& kernel(const npu_runtime& rt, npu_dtype t, int tokens, int rows) {
    const npu_kernel* k = rt.manifest().find(t, t, tokens, 1024, rows);
    if (!k) throw std::runtime_error("kernel missing from the emulator kernel set");
    return *k;
}

// One block through the runtime: fill, sync, launch, wait, sync back; returns the NMSE against fp64.
double run_block(npu_runtime& rt, const npu_kernel& k, unsigned seed, bool sync_a = true, int timeout_ms = -1) {
    npu_buffer a = rt.alloc(k, npu_arg::a), b = rt.alloc(k, npu_arg::b), c = rt.alloc(k, npu_arg::c);
    const xdna_test::block_data d = xdna_test::fill_block(k, a, b, seed);
    if (sync_a) a.sync_to_device();
    b.sync_to_device();
    npu_run run = rt.launch(k, a, b, c);
    rt.wait(run, timeout_ms);
    c.sync_from_device();
    return xdna_test::nmse(k, c.data(), d.ref);
}

// Polls until the runtime has no parked run left (the driver ended them and they were reaped), or 20 s pass.
void wait_until_reaped(npu_runtime& rt) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (rt.parked() > 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

template <typename F> npu_error expect_npu_error(F&& f) {
    try {
        f();
    } catch (const npu_error& e) {
        return e;
    }
    ADD_FAILURE() << "no npu_error";
    return npu_error(npu_errc::config, "");
}

} // namespace

TEST(NpuRuntime, OpensTheEmulatorAndComputesBlocks) {
    auto rt = npu_runtime::open(test_options());
    EXPECT_TRUE(rt->emulated());
    EXPECT_TRUE(rt->results_valid());
    EXPECT_NE(rt->device_name().find("emulator"), std::string::npos);
    EXPECT_LE(run_block(*rt, kernel(*rt, npu_dtype::bf16, 128, 256), 1), 1e-12);
    EXPECT_EQ(run_block(*rt, kernel(*rt, npu_dtype::i8, 64, 512), 2), 0.0);
    EXPECT_EQ(rt->designs_loaded(), 2);
    const npu_stats s = rt->stats();
    EXPECT_EQ(s.launches, 2u);
    EXPECT_EQ(s.completed, 2u);
    EXPECT_EQ(s.loads, 2u);
}

TEST(NpuRuntime, DoubleBufferedSlotsOverlap) {
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    struct slot { npu_buffer a, b, c; xdna_test::block_data d; npu_run run; };
    slot s[2];
    for (auto& x : s) {
        x.a = rt->alloc(k, npu_arg::a);
        x.b = rt->alloc(k, npu_arg::b);
        x.c = rt->alloc(k, npu_arg::c);
    }
    // Fill slot 1 while slot 0 runs, then the other way round, as the NPU worker does.
    for (int step = 0; step < 6; ++step) {
        slot& cur = s[step % 2];
        if (cur.run.active()) {
            rt->wait(cur.run);
            cur.c.sync_from_device();
            EXPECT_LE(xdna_test::nmse(k, cur.c.data(), cur.d.ref), 1e-12) << "step " << step;
        }
        cur.d = xdna_test::fill_block(k, cur.a, cur.b, 100 + step);
        cur.a.sync_to_device();
        cur.b.sync_to_device();
        cur.run = rt->launch(k, cur.a, cur.b, cur.c);
    }
    for (auto& x : s) {
        rt->wait(x.run);
        x.c.sync_from_device();
        EXPECT_LE(xdna_test::nmse(k, x.c.data(), x.d.ref), 1e-12);
    }
}

TEST(NpuRuntime, SkippedSyncGivesWrongResultsNotAnError) {
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    EXPECT_NEAR(run_block(*rt, k, 3, /*sync_a=*/false), 1.0, 1e-9);   // the device read zeros for A
    EXPECT_LE(run_block(*rt, k, 3), 1e-12);
}

TEST(NpuRuntime, LeastRecentlyUsedUnloadingWithinTheBudget) {
    npu_options o = test_options();
    o.context_budget = 1;
    auto rt = npu_runtime::open(o);
    const npu_kernel& bf = kernel(*rt, npu_dtype::bf16, 64, 256);
    const npu_kernel& q = kernel(*rt, npu_dtype::i8, 64, 256);
    for (int i = 0; i < 3; ++i) {
        EXPECT_LE(run_block(*rt, bf, 10 + i), 1e-12);
        EXPECT_EQ(run_block(*rt, q, 20 + i), 0.0);
        EXPECT_EQ(rt->designs_loaded(), 1);
    }
    const npu_stats s = rt->stats();
    EXPECT_EQ(s.loads, 6u);
    EXPECT_EQ(s.unloads, 5u);
    // Blocks of one design share its context: switching between them loads nothing.
    const npu_kernel& bf2 = kernel(*rt, npu_dtype::i8, 512, 512);
    EXPECT_EQ(run_block(*rt, bf2, 30), 0.0);
    EXPECT_EQ(rt->stats().loads, 6u);
}

TEST(NpuRuntime, OtherProcessesHoldingContexts) {
    {
        // Five held elsewhere: the second design only fits after the runtime gives back its first one.
        scoped_env others("XDNA_EMU_OTHER_CONTEXTS", "5");
        auto rt = npu_runtime::open(test_options());
        EXPECT_LE(run_block(*rt, kernel(*rt, npu_dtype::bf16, 64, 256), 4), 1e-12);
        EXPECT_EQ(run_block(*rt, kernel(*rt, npu_dtype::i8, 64, 256), 5), 0.0);
        EXPECT_EQ(rt->designs_loaded(), 1);
        EXPECT_EQ(rt->stats().unloads, 1u);
    }
    {
        // All six held elsewhere: a clear error, and the runtime still answers afterwards.
        scoped_env others("XDNA_EMU_OTHER_CONTEXTS", "6");
        auto rt = npu_runtime::open(test_options());
        const npu_error e = expect_npu_error([&] { rt->acquire(kernel(*rt, npu_dtype::bf16, 64, 256)); });
        EXPECT_EQ(e.code(), npu_errc::context);
        EXPECT_NE(std::string(e.what()).find("bf16_k1024"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("CREATE_HWCTX"), std::string::npos) << e.what();
        EXPECT_EQ(rt->designs_loaded(), 0);
    }
}

TEST(NpuRuntime, KernelNameMissingFromTheXclbin) {
    std::ifstream in(xdna_test::manifest_path());
    nlohmann::json doc = nlohmann::json::parse(in);
    doc["designs"][0]["kernel"] = "MLIR_AIE_MISSING";
    const std::string path = xdna_test::kernels_dir() + "/test_runtime_badkernel.json";
    {
        std::ofstream out(path);
        out << doc.dump(1);
    }
    npu_options o = test_options();
    o.manifest_path = path;
    auto rt = npu_runtime::open(o);
    std::remove(path.c_str());
    const npu_error e = expect_npu_error([&] { rt->acquire(kernel(*rt, npu_dtype::bf16, 64, 256)); });
    EXPECT_EQ(e.code(), npu_errc::kernel);
    EXPECT_NE(std::string(e.what()).find("No such kernel 'MLIR_AIE_MISSING'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bf16_k1024.xclbin"), std::string::npos) << e.what();
    // The failed load did not keep a context: the other design still loads and runs.
    EXPECT_EQ(run_block(*rt, kernel(*rt, npu_dtype::i8, 64, 256), 6), 0.0);
}

TEST(NpuRuntime, WrongBuffersAreRefusedClearly) {
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 512);
    npu_buffer a = rt->alloc(k, npu_arg::a), b = rt->alloc(k, npu_arg::b), c = rt->alloc(k, npu_arg::c);
    // A and B swapped: B is 512 x 1024, A only 64 x 1024, so the swapped B is too small.
    npu_error e = expect_npu_error([&] { rt->launch(k, b, a, c); });
    EXPECT_EQ(e.code(), npu_errc::buffer);
    EXPECT_NE(std::string(e.what()).find("buffer B holds 131072 bytes"), std::string::npos) << e.what();
    e = expect_npu_error([&] { rt->launch(k, a, b, a); });
    EXPECT_EQ(e.code(), npu_errc::buffer);
    npu_buffer empty;
    e = expect_npu_error([&] { rt->launch(k, a, empty, c); });
    EXPECT_EQ(e.code(), npu_errc::buffer);
    npu_run never;
    e = expect_npu_error([&] { rt->wait(never); });
    EXPECT_EQ(e.code(), npu_errc::launch);
    e = expect_npu_error([&] { a.sync_to_device(10, a.size()); });
    EXPECT_EQ(e.code(), npu_errc::buffer);
}

TEST(NpuRuntime, ViewsOfViewsAreRefused) {
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    npu_buffer b = rt->alloc(k, npu_arg::b, 4 * size_t(256) * 1024 * 2);
    npu_buffer v = b.view(4096, size_t(512) * 1024 * 2);
    EXPECT_FALSE(b.is_view());
    EXPECT_TRUE(v.is_view());
    // XRT would give a view of v the device address of b plus the inner offset only: refused, with the reason.
    const npu_error e = expect_npu_error([&] { v.view(4096, 1024); });
    EXPECT_EQ(e.code(), npu_errc::buffer);
    EXPECT_NE(std::string(e.what()).find("view of a view"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("XRT issue 9952"), std::string::npos) << e.what();
    // The same range taken from the whole buffer is fine, and computes the block it holds.
    npu_buffer w = b.view(4096 + 4096, size_t(256) * 1024 * 2);
    EXPECT_TRUE(w.is_view());
    npu_buffer a = rt->alloc(k, npu_arg::a), c = rt->alloc(k, npu_arg::c);
    const xdna_test::block_data d = xdna_test::fill_block(k, a, w, 21);
    a.sync_to_device();
    w.sync_to_device();
    npu_run run = rt->launch(k, a, w, c);
    rt->wait(run);
    c.sync_from_device();
    EXPECT_LE(xdna_test::nmse(k, c.data(), d.ref), 1e-12);
}

TEST(NpuRuntime, HardwareKernelsAreRefusedByTheEmulator) {
    std::ifstream in(xdna_test::manifest_path());
    nlohmann::json doc = nlohmann::json::parse(in);
    doc["emulator"] = false;
    const std::string path = xdna_test::kernels_dir() + "/test_runtime_hardware.json";
    {
        std::ofstream out(path);
        out << doc.dump(1);
    }
    npu_options o = test_options();
    o.manifest_path = path;
    const npu_error e = expect_npu_error([&] { npu_runtime::open(o); });
    std::remove(path.c_str());
    EXPECT_EQ(e.code(), npu_errc::manifest);
    EXPECT_NE(std::string(e.what()).find("lists hardware kernels"), std::string::npos) << e.what();
}

TEST(NpuRuntime, BadOptions) {
    npu_options o = test_options();
    o.context_budget = 0;
    EXPECT_EQ(expect_npu_error([&] { npu_runtime::open(o); }).code(), npu_errc::config);
    o = test_options();
    o.manifest_path = xdna_test::kernels_dir() + "/missing.json";
    EXPECT_EQ(expect_npu_error([&] { npu_runtime::open(o); }).code(), npu_errc::manifest);
}

TEST(NpuRuntime, InjectedRunFailureThenRecovery) {
    scoped_env fault("XDNA_EMU_FAULT", "error");
    scoped_env after("XDNA_EMU_FAULT_AFTER", "1");
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    EXPECT_LE(run_block(*rt, k, 7), 1e-12);   // run 1 succeeds
    const npu_error e = expect_npu_error([&] { run_block(*rt, k, 8); });   // run 2 fails
    EXPECT_EQ(e.code(), npu_errc::run_failed);
    EXPECT_NE(std::string(e.what()).find("ERT_CMD_STATE_ERROR"), std::string::npos) << e.what();
    EXPECT_LE(run_block(*rt, k, 9), 1e-12);   // and the runtime carries on
    const npu_stats s = rt->stats();
    EXPECT_EQ(s.failed, 1u);
    EXPECT_EQ(s.loads, 2u);   // the failed design was reloaded afresh
}

TEST(NpuRuntime, InjectedTimeoutThenRecovery) {
    // The run cannot be aborted (amdxdna refuses it) nor let go (XRT aborts the process): the runtime parks it until
    // the driver's watchdog ends it (here the in-tree driver's job timeout, shortened), and reaps it then.
    scoped_env fault("XDNA_EMU_FAULT", "timeout");
    scoped_env driver("XDNA_EMU_DRIVER", "intree");
    // far past the wait, even in sanitizer builds (under ThreadSanitizer on the 2-CPU VM the call took up to 4.3 s
    // before its error: opening the design and the first dispatch, beside the 200 ms wait)
    scoped_env job("XDNA_EMU_JOB_TIMEOUT_MS", "10000");
    npu_options o = test_options();
    o.timeout_ms = 200;
    auto rt = npu_runtime::open(o);
    const npu_kernel& k = kernel(*rt, npu_dtype::i8, 64, 256);
    const auto t0 = std::chrono::steady_clock::now();
    const npu_error e = expect_npu_error([&] { run_block(*rt, k, 11); });
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(e.code(), npu_errc::timeout);
    EXPECT_NE(std::string(e.what()).find("did not finish within 200 ms; it stays on the NPU, with its buffers and "
                                         "hardware context, until the driver ends it"),
              std::string::npos) << e.what();
    EXPECT_GE(ms, 200.0);
    EXPECT_LT(ms, 10000.0) << "the caller waited for the driver";
    EXPECT_EQ(rt->parked(), 1);
    EXPECT_EQ(run_block(*rt, k, 12, true, 60000), 0.0);   // on a fresh context; a generous timeout for sanitizers
    EXPECT_EQ(rt->stats().timed_out, 1u);
    wait_until_reaped(*rt);
    EXPECT_EQ(rt->parked(), 0) << "the run the driver ended was not reaped";
    EXPECT_EQ(rt->stats().reaped, 1u);
}

// A run slower than the runtime's timeout, under each driver model: the caller has its error at the timeout, the run
// stays parked until the driver ends it, then is reaped; a second run already queued behind it on its context is
// parked with it without a wait. Nothing aborts.
class NpuRuntimeDrivers : public ::testing::TestWithParam<const char*> {};

TEST_P(NpuRuntimeDrivers, SlowRunParkedThenReaped) {
    const bool intree = std::string(GetParam()) == "intree";
    scoped_env fault("XDNA_EMU_FAULT", "timeout");
    scoped_env driver("XDNA_EMU_DRIVER", GetParam());
    scoped_env job("XDNA_EMU_JOB_TIMEOUT_MS", "600");
    scoped_env tdr("XDNA_EMU_TDR_MS", "200");
    scoped_env log("XDNA_EMU_LOG", "0");
    npu_options o = test_options();
    o.timeout_ms = 100;
    auto rt = npu_runtime::open(o);
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    npu_buffer a = rt->alloc(k, npu_arg::a), b = rt->alloc(k, npu_arg::b), c = rt->alloc(k, npu_arg::c);
    npu_buffer c2 = rt->alloc(k, npu_arg::c);
    xdna_test::fill_block(k, a, b, 21);
    a.sync_to_device();
    b.sync_to_device();
    npu_run hung = rt->launch(k, a, b, c), behind = rt->launch(k, a, b, c2);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(expect_npu_error([&] { rt->wait(hung); }).code(), npu_errc::timeout);
    EXPECT_FALSE(hung.active());
    EXPECT_TRUE(rt->park(behind));
    EXPECT_FALSE(behind.active());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(ms, 600.0) << "the caller waited for the driver";
    EXPECT_EQ(rt->parked(), 2);
    wait_until_reaped(*rt);
    const double reaped_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(rt->parked(), 0);
    EXPECT_EQ(rt->stats().parked, 2u);
    EXPECT_EQ(rt->stats().reaped, 2u);
    EXPECT_GE(reaped_ms, intree ? 600.0 - 100.0 : 200.0 - 100.0);   // not before the driver's watchdog could fire
    EXPECT_LE(run_block(*rt, k, 22, true, 60000), 1e-12);   // the runtime goes on
}

INSTANTIATE_TEST_SUITE_P(Drivers, NpuRuntimeDrivers, ::testing::Values("intree", "outoftree"));

// The process ends with a run still on the NPU (the in-tree driver's 60 s job timeout not yet passed): the runtime
// waits a bounded time for the driver, then leaves the run to it; exit neither aborts nor hangs.
void exit_with_a_parked_run() {
    npu_options o = test_options();
    o.timeout_ms = 50;
    auto rt = npu_runtime::open(o);
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    try {
        run_block(*rt, k, 31);
    } catch (const npu_error&) {
    }
    const auto t0 = std::chrono::steady_clock::now();
    rt.reset();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::exit(ms < 5000.0 ? 0 : 3);
}

TEST(NpuRuntimeDeathTest, ExitWithAParkedRunNeitherAbortsNorHangs) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    scoped_env fault("XDNA_EMU_FAULT", "timeout");
    scoped_env driver("XDNA_EMU_DRIVER", "intree");
    scoped_env log("XDNA_EMU_LOG", "0");
    EXPECT_EXIT(exit_with_a_parked_run(), ::testing::ExitedWithCode(0), "left to the driver");
}

TEST(NpuRuntime, InjectedNanResults) {
    scoped_env fault("XDNA_EMU_FAULT", "nan");
    scoped_env count("XDNA_EMU_FAULT_COUNT", "0");
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    EXPECT_TRUE(std::isnan(run_block(*rt, k, 13)));
    EXPECT_TRUE(std::isnan(run_block(*rt, k, 14)));   // count 0: every run from then on
}

TEST(NpuRuntime, NullModeReportsInvalidResults) {
    scoped_env mode("XDNA_EMU_MODE", "null");
    scoped_env disp("XDNA_EMU_DISPATCH_US", "2000");
    auto rt = npu_runtime::open(test_options());
    EXPECT_FALSE(rt->results_valid());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    npu_buffer a = rt->alloc(k, npu_arg::a), b = rt->alloc(k, npu_arg::b), c = rt->alloc(k, npu_arg::c);
    rt->acquire(k);
    const auto t0 = std::chrono::steady_clock::now();
    npu_run run = rt->launch(k, a, b, c);
    rt->wait(run);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(ms, 2.0);   // held back to the modelled dispatch latency
}

TEST(NpuRuntime, NullModeModelsQueuedLaunches) {
    // Four launches queued at once: the first pays the dispatch latency, the others only the queued gap.
    scoped_env mode("XDNA_EMU_MODE", "null");
    scoped_env disp("XDNA_EMU_DISPATCH_US", "50000");
    scoped_env gap("XDNA_EMU_QUEUED_US", "5000");
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);   // the timing model: 0.03 ms of work each
    std::vector<npu_buffer> bufs;
    for (int i = 0; i < 12; ++i) bufs.push_back(rt->alloc(k, static_cast<npu_arg>(i % 3)));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<npu_run> runs;
    for (int i = 0; i < 4; ++i) runs.push_back(rt->launch(k, bufs[3 * i], bufs[3 * i + 1], bufs[3 * i + 2]));
    for (auto& r : runs) rt->wait(r);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(ms, 65.0);    // 50 + 3 x 5
    EXPECT_LT(ms, 180.0);   // not 4 x 50: the dispatches overlap
}

// The wall-clock bounds below are the model's lower bounds (a wait never returns before the modelled end), with
// figures set large enough that a loaded machine cannot blur them.
static double seconds_of_runs(npu_runtime& rt, const std::vector<const npu_kernel*>& ks) {
    std::vector<npu_buffer> bufs;
    for (const npu_kernel* k : ks) {
        rt.acquire(*k);
        for (int i = 0; i < 3; ++i) bufs.push_back(rt.alloc(*k, static_cast<npu_arg>(i)));
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<npu_run> runs;
    for (size_t i = 0; i < ks.size(); ++i) runs.push_back(rt.launch(*ks[i], bufs[3 * i], bufs[3 * i + 1], bufs[3 * i + 2]));
    for (auto& r : runs) rt.wait(r);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(NpuRuntime, NullModeChargesADesignSwitch) {
    // A run of another design than the one before it waits for the array's reconfiguration; runs of one design don't.
    scoped_env mode("XDNA_EMU_MODE", "null");
    scoped_env disp("XDNA_EMU_DISPATCH_US", "0");
    scoped_env gap("XDNA_EMU_QUEUED_US", "0");
    scoped_env sw("XDNA_EMU_SWITCH_US", "60000");
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& narrow = kernel(*rt, npu_dtype::bf16, 256, 256);   // the first design of the set (m = 16)
    const npu_kernel* wide = nullptr;                                       // the same block in the wide tile
    for (const npu_kernel& k : rt->manifest().kernels()) {
        if (k.design != narrow.design && k.a == npu_dtype::bf16 && k.tokens == 256 && k.rows == 256 && k.k == 1024) wide = &k;
    }
    ASSERT_NE(wide, nullptr);
    EXPECT_GE(rt->manifest().design_of(*wide).tile.m, 64);
    seconds_of_runs(*rt, {&narrow});   // the array holds the narrow design
    EXPECT_GE(seconds_of_runs(*rt, {wide, wide, &narrow}), 0.120);   // two switches
    const double same = seconds_of_runs(*rt, {&narrow, &narrow, &narrow});
    EXPECT_LT(same, 0.060) << "runs of the design the array holds paid a switch";
}

TEST(NpuRuntime, NullModeTimesBlocksByTheSiliconModelAtThePowerModesClock) {
    // The power saver's 0.80 GHz: four 512 x 1,024 x 1,024 blocks of the narrow tile, each as long as the model says.
    scoped_env mode("XDNA_EMU_MODE", "null");
    scoped_env power("XDNA_EMU_POWER_MODE", "powersaver");
    auto rt = npu_runtime::open(test_options());
    EXPECT_NE(rt->device_name().find("software XDNA1"), std::string::npos);
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 512, 1024);
    xdna::xdna1_block b;
    b.M = 512; b.K = 1024; b.N = 1024;
    const double one = xdna::xdna1_block_seconds(rt->manifest().design_of(k).tile, b, xdna::xdna1_clock_saver_hz);
    EXPECT_GT(one, 1.5e-3);
    EXPECT_GE(seconds_of_runs(*rt, {&k, &k, &k, &k}), 4 * one);
}

TEST(NpuRuntime, TellsTheTimingItsRunsAreChargedBy) {
    // What the NPU worker plans with is what the device charges: the silicon model at the power mode's clock by
    // default, a flat what-if rate where one is set, and the dispatch as set.
    const xdna::xdna1_tile tile;
    xdna::xdna1_block b;
    b.M = 256; b.K = 1024; b.N = 512;
    {
        scoped_env power("XDNA_EMU_POWER_MODE", "balanced");
        auto rt = npu_runtime::open(test_options());
        EXPECT_DOUBLE_EQ(rt->timing().clock_hz, xdna::xdna1_clock_balanced_hz);
        EXPECT_DOUBLE_EQ(rt->timing().run_seconds(tile, b), xdna::xdna1_block_seconds(tile, b, xdna::xdna1_clock_balanced_hz));
    }
    scoped_env rate("XDNA_EMU_BF16_GFLOPS", "160");
    scoped_env disp("XDNA_EMU_DISPATCH_US", "400");
    auto rt = npu_runtime::open(test_options());
    EXPECT_DOUBLE_EQ(rt->timing().run_seconds(tile, b), 2.0 * 256 * 1024 * 512 / 160e9);
    EXPECT_DOUBLE_EQ(rt->timing().dispatch_s, 400e-6);
    b.macs = xdna::xdna1_macs::i8;   // int8 stays on the model where only the bf16 rate is set
    EXPECT_DOUBLE_EQ(rt->timing().run_seconds(tile, b), xdna::xdna1_block_seconds(tile, b));
}

TEST(NpuRuntime, TimedModeHoldsCompletionToTheModel) {
    scoped_env mode("XDNA_EMU_MODE", "timed");
    scoped_env rate("XDNA_EMU_BF16_GFLOPS", "1");   // 1 GFLOP/s: a 64 x 1024 x 256 block takes 33.6 ms
    auto rt = npu_runtime::open(test_options());
    const npu_kernel& k = kernel(*rt, npu_dtype::bf16, 64, 256);
    rt->acquire(k);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_LE(run_block(*rt, k, 15), 1e-12);   // timed mode still computes
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(ms, 33.0);
}

TEST(NpuRuntime, SeveralThreadsShareOneRuntime) {
    auto rt = npu_runtime::open(test_options());
    std::atomic<int> bad{0};
    auto worker = [&](npu_dtype t, unsigned seed) {
        const npu_kernel& k = kernel(*rt, t, 64, 256);
        for (int i = 0; i < 3; ++i) {
            const double e = run_block(*rt, k, seed + i);
            if (!(t == npu_dtype::i8 ? e == 0.0 : e <= 1e-12)) ++bad;
        }
    };
    std::thread t1(worker, npu_dtype::bf16, 40), t2(worker, npu_dtype::i8, 50);
    t1.join();
    t2.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(rt->stats().completed, 6u);
}

TEST(NpuRuntime, RuntimesInSequence) {
    for (int i = 0; i < 3; ++i) {
        auto rt = npu_runtime::open(test_options());
        EXPECT_LE(run_block(*rt, kernel(*rt, npu_dtype::bf16, 64, 256), 60 + i), 1e-12);
    }
}
