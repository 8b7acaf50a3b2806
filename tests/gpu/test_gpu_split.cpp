// The GPU worker inside the split: choosing its device from GGML_XDNA_GPU, the rule that keeps the NPU off small
// multiplies next to a GPU, and the engine computing one multiply with NPU, GPU and CPU workers together.
#include "gpu_fixture.h"
#include "backend/compute.h"
#include "config/config.h"
#include "planner/planner.h"
#include "workers/gpu/gpu_worker.h"
#include "workers/gpu/llama_layers.h"

#include "ggml-backend-impl.h"

#include "workers/gpu/rpc_endpoint.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace xdna_test;
using namespace xdna;

TEST(gpu_device_choice, none_turns_the_worker_off) {
    env();
    for (const char * s : { "none", "NONE", "None" }) {
        const gpu_choice c = choose_gpu_device(s);
        EXPECT_EQ(c.dev, nullptr) << s;
        EXPECT_TRUE(c.error.empty()) << s;
    }
}

namespace {

// Devices of a given type for the registry, that only say their name and type: enough for choosing a device (nothing
// is ever computed on them).
struct fake_device {
    std::string name;
    enum ggml_backend_dev_type type;
};

const char * fake_name(ggml_backend_dev_t d) { return ((fake_device *) d->context)->name.c_str(); }
enum ggml_backend_dev_type fake_type(ggml_backend_dev_t d) { return ((fake_device *) d->context)->type; }

ggml_backend_reg_t fake_reg(std::vector<fake_device> devs) {
    struct reg_state {
        std::string name;
        std::vector<fake_device> devs;
        std::vector<ggml_backend_device> handles;
        ggml_backend_reg reg;
    };
    // the registry keeps it for the process (never freed, but reachable from here: not a leak)
    static std::vector<reg_state *> * kept = new std::vector<reg_state *>;
    auto * st = new reg_state;
    kept->push_back(st);
    st->name = "FAKE" + devs.front().name;
    st->devs = std::move(devs);
    ggml_backend_device_i di = {};
    di.get_name = fake_name;
    di.get_description = fake_name;
    di.get_type = fake_type;
    ggml_backend_reg_i ri = {};
    ri.get_name = [](ggml_backend_reg_t r) { return ((reg_state *) r->context)->name.c_str(); };
    ri.get_device_count = [](ggml_backend_reg_t r) { return ((reg_state *) r->context)->handles.size(); };
    ri.get_device = [](ggml_backend_reg_t r, size_t i) -> ggml_backend_dev_t { return &((reg_state *) r->context)->handles[i]; };
    st->reg = { GGML_BACKEND_API_VERSION, ri, st };
    for (fake_device & d : st->devs) st->handles.push_back({ di, &st->reg, &d });
    return &st->reg;
}

}  // namespace

// A discrete GPU is faster through llama.cpp's own offload than as a worker with a share of the rows: by default the
// worker takes only an integrated GPU (shared memory), and a discrete one only when named. So is Mesa's lavapipe, a
// CPU-type Vulkan device that ggml-vulkan reports as a GPU (registered here when the device under test is Vulkan0).
TEST(gpu_device_choice, automatic_takes_only_an_integrated_gpu) {
    env();
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        const auto t = ggml_backend_dev_type(ggml_backend_dev_get(i));
        ASSERT_NE(t, GGML_BACKEND_DEVICE_TYPE_IGPU)
            << "the test adds its own integrated GPU; this registry has one already: " << ggml_backend_dev_name(ggml_backend_dev_get(i));
    }
    EXPECT_EQ(choose_gpu_device("").dev, nullptr);   // no integrated GPU (the RPC server is private; lavapipe a GPU)

    ggml_backend_register(fake_reg({ { "FakeDiscrete0", GGML_BACKEND_DEVICE_TYPE_GPU } }));
    ggml_backend_dev_t discrete = ggml_backend_dev_by_name("FakeDiscrete0");
    ASSERT_NE(discrete, nullptr);
    gpu_choice c = choose_gpu_device("");
    EXPECT_TRUE(c.error.empty()) << c.error;
    EXPECT_EQ(c.dev, nullptr) << "a discrete GPU was taken by default";
    EXPECT_EQ(choose_gpu_device("FakeDiscrete0").dev, discrete) << "a discrete GPU named must be taken";

    ggml_backend_register(fake_reg({ { "FakeIntegrated0", GGML_BACKEND_DEVICE_TYPE_IGPU } }));
    c = choose_gpu_device("");
    EXPECT_TRUE(c.error.empty()) << c.error;
    ASSERT_NE(c.dev, nullptr);
    EXPECT_STREQ(ggml_backend_dev_name(c.dev), "FakeIntegrated0");   // after the discrete one, and still chosen
}

// An integrated GPU chosen by default stays llama.cpp's where llama.cpp puts layers on it: this process was given no
// -ngl, which in llama.cpp's tools means every layer that fits (llama_layers.h), so no worker is made; named, it is.
TEST(gpu_device_choice, the_default_igpu_stays_off_where_llama_cpp_puts_layers_on_it) {
    env();
    ASSERT_TRUE(xdna::llama_layers_of_this_process().on_gpu) << "run without -ngl 0";
    if (!ggml_backend_dev_by_name("FakeIntegrated1")) {
        ggml_backend_register(fake_reg({ { "FakeIntegrated1", GGML_BACKEND_DEVICE_TYPE_IGPU } }));
    }
    config cfg;
    ASSERT_NE(choose_gpu_device(cfg.gpu).dev, nullptr) << "an integrated GPU is the default device";
    EXPECT_EQ(make_gpu_worker(cfg), nullptr) << "a worker on the iGPU llama.cpp puts its layers on";
    cfg.gpu = "none";
    EXPECT_EQ(make_gpu_worker(cfg), nullptr);
}

TEST(gpu_device_choice, a_name_selects_that_device) {
    env();
    const gpu_choice c = choose_gpu_device("cpu");
    EXPECT_EQ(c.dev, env().cpu_dev);
    EXPECT_TRUE(c.error.empty());
}

TEST(gpu_device_choice, bad_settings_give_one_clear_line) {
    env();
    struct bad { const char * setting; const char * says; };
    for (const bad & b : { bad{ "NoSuchGPU7", "names no device" }, bad{ "rpc:nohostport", "is not rpc:HOST:PORT" },
                           bad{ "rpc:127.0.0.1:0", "is not rpc:HOST:PORT" }, bad{ "rpc:127.0.0.1:99999", "is not rpc:HOST:PORT" } }) {
        const gpu_choice c = choose_gpu_device(b.setting);
        EXPECT_EQ(c.dev, nullptr) << b.setting;
        EXPECT_NE(c.error.find(b.says), std::string::npos) << b.setting << ": " << c.error;
        EXPECT_EQ(c.error.find('\n'), std::string::npos);
    }
}

// ggml-rpc aborts the process when no server answers: the worker must find out first and say so.
TEST(gpu_device_choice, an_rpc_endpoint_without_a_server_is_refused_not_fatal) {
    env();
    rpc_server probe_port_only("/nonexistent/ggml-rpc-server", 1, 0.2);   // a free port, and nothing listening on it
    ASSERT_FALSE(probe_port_only.ok());
    const gpu_choice c = choose_gpu_device("rpc:" + probe_port_only.endpoint());
    EXPECT_EQ(c.dev, nullptr);
    EXPECT_NE(c.error.find("no RPC server listens"), std::string::npos) << c.error;
}

TEST(gpu_device_choice, an_rpc_endpoint_gives_a_private_gpu_device) {
    if (env().gpu_setting.rfind("rpc:", 0) != 0) GTEST_SKIP() << "the device under test is " << env().gpu_setting;
    ASSERT_NE(env().gpu_dev, nullptr) << env().error;
    EXPECT_EQ(ggml_backend_dev_type(env().gpu_dev), GGML_BACKEND_DEVICE_TYPE_GPU);
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        EXPECT_NE(ggml_backend_dev_get(i), env().gpu_dev) << "the RPC device must not be visible to llama.cpp";
    }
}


namespace {

// A stand-in NPU that computes its rows on a private CPU backend and remembers what it was given.
class recording_npu final : public worker {
  public:
    recording_npu() : cpu(cpu_worker::create(env().cpu_dev)) {}
    worker_kind kind() const override { return worker_kind::npu; }
    const char * name() const override { return "test-npu"; }
    bool accepts(const xdna::multiply &) const override { return true; }
    int64_t row_align(const xdna::multiply &) const override { return 256; }
    void begin(const xdna::multiply & m, row_range rows) override { taken += rows.size(); last = cpu->compute(m, rows); }
    work_record end() override { return last; }

    int64_t taken = 0;

  private:
    std::unique_ptr<cpu_worker> cpu;
    work_record last;
};

struct split_run {
    int64_t npu = 0, gpu = 0, cpu = 0;
};

// One multiply through the engine with the fake NPU (fixed half of the rows when it joins), the GPU worker on
// `gpu_dev` and the CPU worker; the result must equal the stock CPU's.
split_run run_split(mm_tensors & mm, ggml_backend_dev_t gpu_dev, double npu_min_gflop = 4.0) {
    const std::vector<float> ref = cpu_reference(mm);
    planner_options po;
    po.npu_share = 0.5;
    po.gpu_npu_min_gflop = npu_min_gflop;
    po.gpu_share = 0.5;   // of the rows the NPU leaves: fixed, so every worker takes rows
    split_planner planner(po);
    std::unique_ptr<cpu_worker> cpu = cpu_worker::create(env().cpu_dev);
    recording_npu npu;
    gpu_worker gpu(gpu_dev);
    compute_engine engine(planner, planner, 1, *cpu, { &npu, &gpu });
    mm.fill_result(0.0f);
    EXPECT_EQ(engine.compute(mm.node), GGML_STATUS_SUCCESS);
    const std::vector<float> got = mm.result();
    EXPECT_LT(nmse_rows(ref, got, mm.rows(), 0, mm.rows()), 5e-4);
    split_run s;
    s.npu = npu.taken;
    const std::string sum = engine.summary();
    s.gpu = sum.find("gpu:") != std::string::npos;
    s.cpu = sum.find("cpu:") != std::string::npos;
    return s;
}

}  // namespace

// Below planner_options::gpu_npu_min_gflop (4) the NPU stays out of a multiply the GPU takes part in.
TEST(gpu_split, a_small_multiply_goes_to_gpu_and_cpu_only) {
    if (!env().gpu_dev) FAIL() << env().error;
    ASSERT_EQ(planner_options{}.gpu_npu_min_gflop, 4.0) << "the test assumes the default threshold";
    mm_tensors mm({ GGML_TYPE_Q8_0, 512, 512, 32 });   // 0.017 GFLOP
    const split_run s = run_split(mm, env().gpu_dev);
    EXPECT_EQ(s.npu, 0);
    EXPECT_EQ(s.gpu, 1);
}

// At or above the threshold all three workers share it.
TEST(gpu_split, a_large_multiply_goes_to_all_three) {
    if (!env().cpu_dev) FAIL();
    mm_tensors mm({ GGML_TYPE_Q8_0, 4096, 4096, 128 });   // 4.29 GFLOP
    ASSERT_GE(shape_key_of(mm.node, false).flops(), 4e9);
    // the CPU device stands in for the GPU here: a 17 MiB weight over RPC would only make the test slow
    const split_run s = run_split(mm, env().cpu_dev);
    EXPECT_EQ(s.npu, 2048);
    EXPECT_EQ(s.gpu, 1);
    EXPECT_EQ(s.cpu, 1);
}

// Repacked weights (x86's default layout of Q4_0): the GPU takes rows of them too (the repack inverted in its copy),
// so the NPU rule applies as to any other weight, and with the NPU let in all three share the multiply.
TEST(gpu_split, repacked_weights_go_to_the_gpu_too) {
    if (!env().gpu_dev) FAIL() << env().error;
    if (!env().repack_buft) GTEST_SKIP() << "this CPU backend has no CPU_REPACK buffer type";
    mm_tensors mm({ GGML_TYPE_Q4_0, 512, 512, 32 }, env().repack_buft);
    if (ggml_get_first_tensor(mm.wctx)->extra == nullptr) GTEST_SKIP() << "Q4_0 is not repacked by this CPU build";
    split_run s = run_split(mm, env().gpu_dev);
    EXPECT_EQ(s.npu, 0) << "a small multiply beside the GPU";
    EXPECT_EQ(s.gpu, 1);
    s = run_split(mm, env().gpu_dev, 0.0);
    EXPECT_EQ(s.npu, 256);
    EXPECT_EQ(s.gpu, 1);
    EXPECT_EQ(s.cpu, 1);
}

// Any TCP server that accepts connections but never answers (the connection check alone passes it): ggml-rpc would
// wait for its hello for ever. Refused within the timeout, with one line.
TEST(gpu_device_choice, a_silent_listener_is_refused_within_the_timeout) {
    env();
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ASSERT_EQ(bind(fd, (sockaddr *) &a, sizeof(a)), 0);
    ASSERT_EQ(listen(fd, 4), 0);   // the kernel completes the connection; nobody ever reads or answers
    ASSERT_EQ(getsockname(fd, (sockaddr *) &a, &len), 0);
    const auto t0 = std::chrono::steady_clock::now();
    const gpu_choice c = choose_gpu_device("rpc:127.0.0.1:" + std::to_string(ntohs(a.sin_port)));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    close(fd);
    EXPECT_EQ(c.dev, nullptr);
    EXPECT_NE(c.error.find("did not answer ggml-rpc's hello within 3000 ms"), std::string::npos) << c.error;
    EXPECT_EQ(c.error.find('\n'), std::string::npos);
    EXPECT_GT(took, 2.5);
    EXPECT_LT(took, 4.0);
}

namespace {

// A GPU worker on a server of its own (not the fixture's), as make_gpu_worker builds one for rpc:HOST:PORT.
struct own_rpc_worker {
    rpc_server server{ XDNA_TEST_RPC_SERVER };
    std::unique_ptr<gpu_worker> w;
    own_rpc_worker() {
        if (!server.ok()) return;
        const gpu_choice c = choose_gpu_device("rpc:" + server.endpoint());
        if (!c.dev || !c.rpc) return;
        gpu_worker_options o;
        o.alive = [rpc = c.rpc](std::string * why) { return rpc->alive(3000, why); };
        w = std::make_unique<gpu_worker>(c.dev, o);
    }
};

work_record run_rows(gpu_worker & w, mm_tensors & mm, row_range rows) {
    const xdna::multiply desc = xdna::describe_multiply(mm.node);
    w.begin(desc, rows);
    return w.end();
}

}  // namespace

// A server killed between runs (SIGKILL, as a crash): ggml-rpc would abort the process at the worker's next message.
// The worker finds the connection closed before it sends anything, fails that run (the engine gives its rows to the
// CPU), takes no more work, and is freed without a message to the dead server: the process lives on.
TEST(gpu_worker_rpc, a_killed_server_stops_the_worker_without_ending_the_process) {
    if (env().gpu_setting.rfind("rpc:", 0) != 0) GTEST_SKIP() << "the device under test is " << env().gpu_setting;
    own_rpc_worker o;
    ASSERT_TRUE(o.w) << "no server of its own";
    mm_tensors mm({ GGML_TYPE_Q8_0, 256, 64, 32 });
    ASSERT_TRUE(o.w->accepts(xdna::describe_multiply(mm.node)));
    ASSERT_TRUE(run_rows(*o.w, mm, { 0, 64 }).ok());   // ggml-rpc now holds a connection and the weight
    o.server.kill_now();
    const work_record r = run_rows(*o.w, mm, { 0, 64 });
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.reason, work_failure::device_unavailable);
    EXPECT_FALSE(o.w->accepts(xdna::describe_multiply(mm.node))) << "a lost device must take no more work";
    o.w.reset();   // frees nothing on the server: a message to it would abort here
    SUCCEED();
}

// Killed before the worker's first run: ggml-rpc holds no connection yet (opening the backend would abort on the
// refused connection); the server's hello is tried again instead.
TEST(gpu_worker_rpc, a_server_killed_before_the_first_run_is_found_too) {
    if (env().gpu_setting.rfind("rpc:", 0) != 0) GTEST_SKIP() << "the device under test is " << env().gpu_setting;
    own_rpc_worker o;
    ASSERT_TRUE(o.w) << "no server of its own";
    mm_tensors mm({ GGML_TYPE_Q8_0, 256, 64, 32 });
    o.server.kill_now();
    const work_record r = run_rows(*o.w, mm, { 0, 64 });
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.reason, work_failure::device_unavailable);
    o.w.reset();
}
