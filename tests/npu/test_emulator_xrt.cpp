// Fidelity of the software XDNA1 at the XRT API: the host program sequence mlir-aie uses works, and each
// mistake a runtime layer can make gives what XRT and the driver give (an exception, an error state, or, for a
// missing sync, silently stale data).
#include "npu_instr.h"
#include "npu_test_util.h"

#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_kernel.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

namespace {

// One 64 x 1024 x 256 bf16 block set up the way mlir-aie's test.cpp does it.
struct raw_block {
    xrt::device dev{0u};
    xrt::xclbin xb{xdna_test::kernels_dir() + "/bf16_k1024.xclbin"};
    xrt::hw_context ctx;
    xrt::kernel kern;
    std::vector<uint32_t> instr = xdna::npu_load_instr(xdna_test::kernels_dir() + "/bf16_k1024/t64_r256.bin");
    xrt::bo bo_instr, a, b, c;
    static constexpr int M = 64, K = 1024, N = 256;
    std::vector<double> ref;

    raw_block() {
        dev.register_xclbin(xb);
        ctx = xrt::hw_context(dev, xb.get_uuid());
        kern = xrt::kernel(ctx, "MLIR_AIE");
        bo_instr = xrt::bo(dev, instr.size() * 4, XCL_BO_FLAGS_CACHEABLE, kern.group_id(1));
        a = xrt::bo(dev, size_t(M) * K * 2, XRT_BO_FLAGS_HOST_ONLY, kern.group_id(3));
        b = xrt::bo(dev, size_t(N) * K * 2, XRT_BO_FLAGS_HOST_ONLY, kern.group_id(4));
        c = xrt::bo(dev, size_t(M) * N * 4, XRT_BO_FLAGS_HOST_ONLY, kern.group_id(5));
        std::memcpy(bo_instr.map<void*>(), instr.data(), instr.size() * 4);
        uint16_t* pa = a.map<uint16_t*>();
        uint16_t* pb = b.map<uint16_t*>();
        std::vector<double> da(size_t(M) * K), db(size_t(N) * K);
        for (size_t i = 0; i < da.size(); ++i) {
            pa[i] = xdna::npu_f32_to_bf16(float((i * 37) % 101) / 50.0f - 1.0f);
            da[i] = xdna::npu_bf16_to_f32(pa[i]);
        }
        for (size_t i = 0; i < db.size(); ++i) {
            pb[i] = xdna::npu_f32_to_bf16(float((i * 53) % 97) / 48.0f - 1.0f);
            db[i] = xdna::npu_bf16_to_f32(pb[i]);
        }
        ref.assign(size_t(M) * N, 0.0);
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                double s = 0;
                for (int k = 0; k < K; ++k) s += da[size_t(i) * K + k] * db[size_t(j) * K + k];
                ref[size_t(i) * N + j] = s;
            }
    }
    void sync_inputs() {
        bo_instr.sync(XCL_BO_SYNC_BO_TO_DEVICE);
        a.sync(XCL_BO_SYNC_BO_TO_DEVICE);
        b.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    }
    double nmse() const {
        const float* pc = const_cast<xrt::bo&>(c).map<const float*>();
        double e = 0, n = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
            e += (pc[i] - ref[i]) * (pc[i] - ref[i]);
            n += ref[i] * ref[i];
        }
        return e / n;
    }
};

} // namespace

TEST(EmulatorXrt, MlirAieHostSequenceComputesTheBlock) {
    raw_block r;
    EXPECT_NE(r.dev.get_info<xrt::info::device::name>().find("emulator"), std::string::npos);
    EXPECT_EQ(r.kern.group_id(1), 1);   // instructions: bank 1 (SRAM), as aiecc connects them
    EXPECT_EQ(r.kern.group_id(3), 0);   // data: bank 0 (HOST)
    r.sync_inputs();
    unsigned int opcode = 3;
    xrt::run run = r.kern(opcode, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_COMPLETED);
    r.c.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    EXPECT_LE(r.nmse(), 1e-12);
}

TEST(EmulatorXrt, SkippedSyncGivesStaleData) {
    raw_block r;
    r.bo_instr.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    r.b.sync(XCL_BO_SYNC_BO_TO_DEVICE);   // A is never synced: the device copy is still zero
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_COMPLETED);   // no error, as on the hardware
    r.c.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    EXPECT_NEAR(r.nmse(), 1.0, 1e-9);   // C = 0 x B
    // With A synced, but C read without syncing from the device: the host copy keeps what it had.
    r.a.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    std::memset(r.c.map<void*>(), 0, r.c.size());
    xrt::run run2 = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    EXPECT_EQ(run2.wait(), ERT_CMD_STATE_COMPLETED);
    EXPECT_NEAR(r.nmse(), 1.0, 1e-9);
    r.c.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    EXPECT_LE(r.nmse(), 1e-12);
}

TEST(EmulatorXrt, UnsyncedInstructionBufferFailsTheRun) {
    raw_block r;
    r.a.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    r.b.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_ERROR);
}

TEST(EmulatorXrt, WrongArgumentOrder) {
    raw_block r;
    r.sync_inputs();
    // Data buffers swapped: B (256 x 1024) in A's place is fine in size, A in B's place is too small.
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.b, r.a, r.c);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_ERROR);
    // Instruction count before the instruction buffer: a buffer bound to a scalar argument is refused at once.
    EXPECT_THROW(r.kern(3u, r.instr.size(), r.bo_instr, r.a, r.b, r.c), std::system_error);
    // Opcode missing: the instruction buffer lands on the opcode, a scalar argument.
    EXPECT_THROW(r.kern(r.bo_instr, r.instr.size(), r.a, r.b, r.c), std::system_error);
    // C never set: the NPU would write through a null address.
    xrt::run run3(r.kern);
    run3.set_arg(0, 3u);
    run3.set_arg(1, r.bo_instr);
    run3.set_arg(2, static_cast<uint32_t>(r.instr.size()));
    run3.set_arg(3, r.a);
    run3.set_arg(4, r.b);
    run3.start();
    EXPECT_EQ(run3.wait(), ERT_CMD_STATE_ERROR);
    // The right order still works afterwards.
    xrt::run ok = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    EXPECT_EQ(ok.wait(), ERT_CMD_STATE_COMPLETED);
}

TEST(EmulatorXrt, OpcodeMustBeThree) {
    raw_block r;
    r.sync_inputs();
    xrt::run run = r.kern(2u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_ERROR);
    EXPECT_THROW(run.wait2(std::chrono::milliseconds(100)), xrt::run::command_error);
}

TEST(EmulatorXrt, InstructionBufferInTheWrongGroup) {
    raw_block r;
    // Allocated like a data buffer: host-only memory in bank 0. XRT warns and copies it into bank 1, but the copy
    // is still not in the device heap, so the firmware cannot fetch the instructions.
    xrt::bo wrong(r.dev, r.instr.size() * 4, XRT_BO_FLAGS_HOST_ONLY, r.kern.group_id(3));
    std::memcpy(wrong.map<void*>(), r.instr.data(), r.instr.size() * 4);
    wrong.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    r.a.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    r.b.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    xrt::run run = r.kern(3u, wrong, r.instr.size(), r.a, r.b, r.c);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_ERROR);
}

TEST(EmulatorXrt, OutputInTheWrongGroupNeverReachesIt) {
    raw_block r;
    r.sync_inputs();
    // C allocated in the instruction bank: XRT binds a copy in bank 0, the results land in the copy.
    xrt::bo c_wrong(r.dev, r.c.size(), XRT_BO_FLAGS_HOST_ONLY, r.kern.group_id(1));
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, c_wrong);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_COMPLETED);
    c_wrong.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    const float* pc = c_wrong.map<const float*>();
    for (size_t i = 0; i < r.ref.size(); ++i) ASSERT_EQ(pc[i], 0.0f);
}

TEST(EmulatorXrt, SeventhHardwareContextFails) {
    xrt::device dev(0u);
    xrt::xclbin xb(xdna_test::kernels_dir() + "/bf16_k1024.xclbin");
    dev.register_xclbin(xb);
    std::vector<xrt::hw_context> held;
    for (int i = 0; i < 6; ++i) held.emplace_back(dev, xb.get_uuid());
    try {
        xrt::hw_context seventh(dev, xb.get_uuid());
        FAIL() << "a seventh hardware context was created";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), ENOENT);
        EXPECT_NE(std::string(e.what()).find("DRM_IOCTL_AMDXDNA_CREATE_HWCTX"), std::string::npos) << e.what();
    }
    held.pop_back();   // a freed context can be taken again
    EXPECT_NO_THROW(held.emplace_back(dev, xb.get_uuid()));
}

TEST(EmulatorXrt, ContextsHeldByOtherProcessesCount) {
    xdna_test::scoped_env others("XDNA_EMU_OTHER_CONTEXTS", "5");
    xrt::device dev(0u);
    xrt::xclbin xb(xdna_test::kernels_dir() + "/bf16_k1024.xclbin");
    dev.register_xclbin(xb);
    xrt::hw_context one(dev, xb.get_uuid());
    EXPECT_THROW(xrt::hw_context(dev, xb.get_uuid()), std::system_error);
}

TEST(EmulatorXrt, UnregisteredXclbinAndUnknownKernel) {
    xrt::device dev(0u);
    xrt::xclbin xb(xdna_test::kernels_dir() + "/i8_k1024.xclbin");
    EXPECT_THROW(xrt::hw_context(dev, xb.get_uuid()), std::system_error);
    dev.register_xclbin(xb);
    xrt::hw_context ctx(dev, xb.get_uuid());
    try {
        xrt::kernel k(ctx, "MLIR_AIE_NOPE");
        FAIL() << "no error";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("No such kernel 'MLIR_AIE_NOPE'"), std::string::npos) << e.what();
    }
    xrt::kernel k(ctx, "MLIR_AIE");
    EXPECT_THROW(k.group_id(0), std::system_error);   // the opcode is a scalar
    EXPECT_THROW(k.group_id(9), std::system_error);
}

TEST(EmulatorXrt, XclbinFileErrors) {
    EXPECT_THROW(xrt::xclbin(xdna_test::kernels_dir() + "/none.xclbin"), std::runtime_error);
    EXPECT_THROW(xrt::xclbin(xdna_test::manifest_path()), std::runtime_error);   // JSON, but not an xclbin
}

TEST(EmulatorXrt, InstructionHeapIs64MiB) {
    xrt::device dev(0u);
    std::vector<xrt::bo> bos;
    // 32 KiB granules: 2048 small instruction buffers fill the heap, the next one fails like the driver.
    for (int i = 0; i < 2048; ++i) bos.emplace_back(dev, 64, XCL_BO_FLAGS_CACHEABLE, 1u);
    try {
        xrt::bo extra(dev, 64, XCL_BO_FLAGS_CACHEABLE, 1u);
        FAIL() << "the instruction heap did not run out";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), ENOMEM);
    }
    bos.clear();
    EXPECT_NO_THROW(xrt::bo(dev, 60u << 20, XCL_BO_FLAGS_CACHEABLE, 1u));
    EXPECT_THROW(xrt::bo(dev, 65u << 20, XCL_BO_FLAGS_CACHEABLE, 1u), std::system_error);
    EXPECT_NO_THROW(xrt::bo(dev, 65u << 20, XRT_BO_FLAGS_HOST_ONLY, 0u));   // data buffers have no such cap
}

TEST(EmulatorXrt, SyncBoundsAreChecked) {
    xrt::device dev(0u);
    xrt::bo bo(dev, 4096, XRT_BO_FLAGS_HOST_ONLY, 0u);
    EXPECT_NO_THROW(bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, 1024, 3072));
    EXPECT_THROW(bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, 1024, 3073), std::system_error);
    EXPECT_THROW(bo.sync(XCL_BO_SYNC_BO_GMIO_TO_AIE), std::system_error);
}

TEST(EmulatorXrt, TimeoutAbortRefusedWatchdogEndsTheRun) {
    xdna_test::scoped_env fault("XDNA_EMU_FAULT", "timeout");
    xdna_test::scoped_env driver("XDNA_EMU_DRIVER", "outoftree");
    xdna_test::scoped_env tdr("XDNA_EMU_TDR_MS", "300");
    raw_block r;
    r.sync_inputs();
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(run.wait(std::chrono::milliseconds(50)), ERT_CMD_STATE_TIMEOUT);
    EXPECT_EQ(run.state(), ERT_CMD_STATE_RUNNING);
    // XRT's abort submits ERT_ABORT, which amdxdna refuses: an error, and the run goes on.
    try {
        run.abort();
        ADD_FAILURE() << "abort of a running command was accepted";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), EOPNOTSUPP);
        EXPECT_NE(std::string(e.what()).find("Unsupported op"), std::string::npos) << e.what();
    }
    EXPECT_EQ(run.state(), ERT_CMD_STATE_RUNNING);
    // The driver's watchdog ends it, in a failed state.
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_TIMEOUT);
    EXPECT_EQ(run.state(), ERT_CMD_STATE_TIMEOUT);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(ms, 300.0);
    // Only the first run was faulty: the same run object runs again normally.
    run.start();
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_COMPLETED);
    r.c.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    EXPECT_LE(r.nmse(), 1e-12);
}

TEST(EmulatorXrt, RunCannotStartTwiceWhileActive) {
    xdna_test::scoped_env fault("XDNA_EMU_FAULT", "timeout");
    xdna_test::scoped_env timeout("XDNA_EMU_JOB_TIMEOUT_MS", "100");
    raw_block r;
    r.sync_inputs();
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    EXPECT_THROW(run.start(), std::runtime_error);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_TIMEOUT);
    xrt::run never(r.kern);
    EXPECT_EQ(never.wait(std::chrono::milliseconds(1)), ERT_CMD_STATE_NEW);
    EXPECT_THROW(never.abort(), std::system_error);
}

// A run's end is published ahead of its modelled time (run_status::ends): until then the host must see it running,
// whatever the NPU's thread has done meanwhile: state() says running, a second start and an abort are refused, a
// wait with a shorter timeout times out, and the wait returns not before the modelled end.
TEST(EmulatorXrt, ARunReadsRunningUntilItsModelledEnd) {
    xdna_test::scoped_env mode("XDNA_EMU_MODE", "null");
    xdna_test::scoped_env disp("XDNA_EMU_DISPATCH_US", "200000");   // 200 ms: far longer than the checks below
    raw_block r;
    r.sync_inputs();
    const auto t0 = std::chrono::steady_clock::now();
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));   // the NPU's thread has long taken the run
    EXPECT_EQ(run.state(), ERT_CMD_STATE_RUNNING);
    EXPECT_THROW(run.start(), std::runtime_error);
    EXPECT_THROW(run.abort(), std::system_error);
    EXPECT_EQ(run.wait(std::chrono::milliseconds(10)), ERT_CMD_STATE_TIMEOUT);
    EXPECT_EQ(run.wait(), ERT_CMD_STATE_COMPLETED);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
    EXPECT_EQ(run.state(), ERT_CMD_STATE_COMPLETED);
}

// Sub-buffers (xrt::bo(parent, size, offset)), as the NPU worker's resident weights use them: a kernel argument that
// reads its range of the parent in place; a sync of the sub-buffer moves only that range; ranges past the parent are
// refused; and an output that overlaps an input of the same run is an aliasing error, while disjoint ranges of one
// buffer are fine.
TEST(EmulatorXrt, SubBuffersReadTheirRangeInPlace) {
    raw_block r;
    const size_t nb = r.b.size();
    xrt::bo parent(r.dev, 2 * nb, XRT_BO_FLAGS_HOST_ONLY, r.kern.group_id(4));
    uint8_t* p = parent.map<uint8_t*>();
    std::memset(p, 0x7f, nb);                           // the first half: nothing the block should read
    std::memcpy(p + nb, r.b.map<const void*>(), nb);    // B in the second half
    parent.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    xrt::bo second(parent, nb, nb), first(parent, nb, 0);
    EXPECT_EQ(second.address(), parent.address() + nb);
    EXPECT_EQ(second.map<uint8_t*>(), p + nb);
    r.sync_inputs();
    xrt::run run = r.kern(3u, r.bo_instr, r.instr.size(), r.a, second, r.c);
    ASSERT_EQ(run.wait(), ERT_CMD_STATE_COMPLETED);
    r.c.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    EXPECT_LE(r.nmse(), 1e-12);

    // garbage written to the whole host copy, only the first half synced: the second half's device copy is intact
    std::memset(p, 0x7f, 2 * nb);
    first.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    std::memset(r.c.map<void*>(), 0, r.c.size());
    r.c.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    xrt::run run2 = r.kern(3u, r.bo_instr, r.instr.size(), r.a, second, r.c);
    ASSERT_EQ(run2.wait(), ERT_CMD_STATE_COMPLETED);
    r.c.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    EXPECT_LE(r.nmse(), 1e-12);

    EXPECT_THROW(xrt::bo(parent, nb, nb + 1), std::system_error);
    EXPECT_THROW(xrt::bo(parent, 0, 0), std::system_error);

    // one buffer holding A and C: disjoint ranges run, overlapping ones are refused
    const size_t na = r.a.size(), nc = r.c.size();
    xrt::bo both(r.dev, na + nc, XRT_BO_FLAGS_HOST_ONLY, r.kern.group_id(3));
    std::memcpy(both.map<uint8_t*>(), r.a.map<const void*>(), na);
    both.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    xrt::bo a_part(both, na, 0), c_part(both, nc, na), c_over(both, nc, na / 2);
    xrt::run ok = r.kern(3u, r.bo_instr, r.instr.size(), a_part, r.b, c_part);
    EXPECT_EQ(ok.wait(), ERT_CMD_STATE_COMPLETED);
    xrt::run bad = r.kern(3u, r.bo_instr, r.instr.size(), a_part, r.b, c_over);
    EXPECT_EQ(bad.wait(), ERT_CMD_STATE_ERROR);
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A block on a hardware context of its own whose first run hangs (XDNA_EMU_FAULT is read when its device opens).
std::unique_ptr<raw_block> hanging_block() {
    xdna_test::scoped_env fault("XDNA_EMU_FAULT", "timeout");
    auto r = std::make_unique<raw_block>();
    r->sync_inputs();
    return r;
}

xrt::run start(raw_block& r) {
    return r.kern(3u, r.bo_instr, r.instr.size(), r.a, r.b, r.c);
}

// A hung run on one context with a second queued behind it, and a block on another context
struct hung_and_other {
    std::unique_ptr<raw_block> hung = hanging_block();
    raw_block other;
    xrt::run first, behind;
    hung_and_other() {
        other.sync_inputs();
        first = start(*hung);
        behind = start(*hung);
    }
};

} // namespace

// XRT 2.23 and later abort the process when a run is destroyed while its command is in progress (run_impl's
// destructor): the emulator does the same, so that code which lets go of a run in flight fails here as on hardware.
TEST(EmulatorXrtDeathTest, RunDestroyedInFlightAbortsAsXrtDoes) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    xdna_test::scoped_env log("XDNA_EMU_LOG", "0");
    EXPECT_DEATH(
        {
            auto r = hanging_block();
            xrt::run run = r->kern(3u, r->bo_instr, r->instr.size(), r->a, r->b, r->c);
            EXPECT_EQ(run.wait(std::chrono::milliseconds(20)), ERT_CMD_STATE_TIMEOUT);
            run = xrt::run();   // the last handle of a run in flight
        },
        "xrt::run destructed while command is still in progress");
}

TEST(EmulatorXrt, RunDestroyedWhileAnExceptionPropagatesDoesNotAbort) {
    xdna_test::scoped_env timeout("XDNA_EMU_JOB_TIMEOUT_MS", "200");
    xdna_test::scoped_env log("XDNA_EMU_LOG", "0");
    auto r = hanging_block();
    bool caught = false;
    try {
        xrt::run run = r->kern(3u, r->bo_instr, r->instr.size(), r->a, r->b, r->c);
        throw std::runtime_error("unwinding");
    } catch (const std::runtime_error&) {
        caught = true;   // XRT checks std::uncaught_exceptions(): the run went during unwinding, without an abort
    }
    EXPECT_TRUE(caught);
    // a completed run and a never-started one go quietly
    auto ok = std::make_unique<raw_block>();
    ok->sync_inputs();
    xrt::run done = ok->kern(3u, ok->bo_instr, ok->instr.size(), ok->a, ok->b, ok->c);
    EXPECT_EQ(done.wait(), ERT_CMD_STATE_COMPLETED);
    done = xrt::run();
    xrt::run never(ok->kern);
}

// In-tree amdxdna: the DRM scheduler's job timeout ends the hung job in TIMEOUT and the runs queued behind it on its
// context in ABORT; another context runs meanwhile. The default is the driver's 60 s; shortened here.
TEST(EmulatorXrt, InTreeJobTimeoutEndsTheHungRun) {
    xdna_test::scoped_env driver("XDNA_EMU_DRIVER", "intree");
    xdna_test::scoped_env timeout("XDNA_EMU_JOB_TIMEOUT_MS", "400");
    hung_and_other h;
    const auto t0 = std::chrono::steady_clock::now();   // the hang began at most a moment before
    xrt::run &first = h.first, &behind = h.behind;
    xrt::run elsewhere = start(h.other);
    EXPECT_EQ(elsewhere.wait(), ERT_CMD_STATE_COMPLETED);
    EXPECT_LT(ms_since(t0), 400.0) << "another context waited for the hung one";
    EXPECT_EQ(first.state(), ERT_CMD_STATE_RUNNING);
    EXPECT_EQ(behind.state(), ERT_CMD_STATE_QUEUED);
    EXPECT_EQ(first.wait(), ERT_CMD_STATE_TIMEOUT);
    EXPECT_GE(ms_since(t0), 400.0 - 50.0);
    EXPECT_EQ(behind.wait(), ERT_CMD_STATE_ABORT);
    // the context restarted: its next run computes
    first.start();
    EXPECT_EQ(first.wait(), ERT_CMD_STATE_COMPLETED);
    h.hung->c.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    EXPECT_LE(h.hung->nmse(), 1e-12);
}

// Out-of-tree amdxdna: the TDR checks every period and recovers only when runs are pending and no context made
// progress since its last check (aie2_tdr.c): while another context completes runs, the hung one stays hung; once
// that stops, the hung run ends in TIMEOUT and every other pending run in ABORT.
TEST(EmulatorXrt, OutOfTreeTdrFiresOnlyWhenEveryContextIsStuck) {
    xdna_test::scoped_env driver("XDNA_EMU_DRIVER", "outoftree");
    xdna_test::scoped_env tdr("XDNA_EMU_TDR_MS", "200");
    hung_and_other h;
    xrt::run &first = h.first, &behind = h.behind;
    raw_block& other = h.other;
    xrt::run busy(other.kern);
    const auto t0 = std::chrono::steady_clock::now();
    int runs = 0;
    while (ms_since(t0) < 1000.0) {   // five TDR periods of another context making progress
        busy(3u, other.bo_instr, static_cast<unsigned>(other.instr.size()), other.a, other.b, other.c);
        ASSERT_EQ(busy.wait(), ERT_CMD_STATE_COMPLETED);
        ++runs;
    }
    EXPECT_GT(runs, 5);
    EXPECT_EQ(first.state(), ERT_CMD_STATE_RUNNING) << "the TDR fired while a context made progress";
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_EQ(first.wait(), ERT_CMD_STATE_TIMEOUT);
    const double found = ms_since(t1);
    EXPECT_GE(found, 200.0 - 1.0);   // a whole period without progress, then a check: one to two periods
    EXPECT_LT(found, 2000.0);
    EXPECT_EQ(behind.wait(), ERT_CMD_STATE_ABORT);
}
