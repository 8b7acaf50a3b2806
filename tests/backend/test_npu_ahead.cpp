// A multiply begun ahead of its turn (compute_engine::run_ahead): in llama.cpp's graphs Q's input is also K and V's,
// whose pair comes in a later split (Q's norm and rope on the CPU between). ggml's scheduler hands the backend every
// split first (graph_optimize), then computes them in order; here the two splits are handed over the same way, by
// hand, on the emulated NPU in exact mode, at the share CTest sets:
// - between the two, the pair's result tensors keep what another tensor wrote there (ggml's allocator may place one
//   there until the pair's turn): the NPU keeps its rows until then;
// - the pair's results are, byte for byte, what the backend gives for the pair alone, and the report counts the pair
//   begun ahead where the NPU took rows; the planner learned its head start (the wait before its turn) apart, and the
//   NPU's time in the report is its own, without that wait;
// - where the backend is handed another multiply first, what was begun ahead is dropped, and the pair's results are
//   still those of the pair alone.
#include "repacked_case.h"

#include "ggml-backend-impl.h"
#include "xdna_ggml_compat.h"

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

using namespace xdna_test;

namespace {

// Q (2m rows) and the pair K, V (m rows each) of one input x (n tokens), Q4_0 weights in the CPU_REPACK buffer, and a
// multiply of another input (an unrelated one, handed over in between where the test drops what was begun ahead).
struct ahead_case {
    ggml_context *        wctx = nullptr, * actx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr, abuf = nullptr;
    ggml_tensor *         q = nullptr, * v = nullptr, * k = nullptr, * other = nullptr;
    std::string           skip;

    ahead_case(int64_t kin, int64_t m, int64_t n) {
        const loaded_backends & lb = load_backends();
        if (!lb.repack_buft) { skip = "this CPU backend has no CPU_REPACK buffer type"; return; }
        ggml_init_params p = { 16 * ggml_tensor_overhead(), nullptr, true };
        wctx = ggml_init(p);
        actx = ggml_init(p);
        ggml_tensor * wq = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_0, kin, 2 * m);
        ggml_tensor * wv = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_0, kin, m);
        ggml_tensor * wk = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_0, kin, m);
        wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, lb.repack_buft);
        ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        if (wq->extra == nullptr) { skip = "q4_0 is not repacked here"; return; }
        fill_weight(wq, 21);
        fill_weight(wv, 22);
        fill_weight(wk, 23);
        ggml_tensor * x  = ggml_new_tensor_2d(actx, GGML_TYPE_F32, kin, n);
        ggml_tensor * x2 = ggml_new_tensor_2d(actx, GGML_TYPE_F32, kin, n);
        q = ggml_mul_mat(actx, wq, x);
        v = ggml_mul_mat(actx, wv, x);
        k = ggml_mul_mat(actx, wk, x);
        other = ggml_mul_mat(actx, wv, x2);
        abuf = ggml_backend_alloc_ctx_tensors_from_buft(actx, ggml_backend_cpu_buffer_type());
        const std::vector<float> xf = random_floats(size_t(ggml_nelements(x)), 24), xf2 = random_floats(size_t(ggml_nelements(x)), 25);
        ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));
        ggml_backend_tensor_set(x2, xf2.data(), 0, ggml_nbytes(x2));
    }
    ~ahead_case() {
        if (abuf) ggml_backend_buffer_free(abuf);
        if (wbuf) ggml_backend_buffer_free(wbuf);
        if (actx) ggml_free(actx);
        if (wctx) ggml_free(wctx);
    }
};

// A graph of the given nodes, in that order (a split, as the scheduler hands it over).
struct graph_of {
    ggml_context * ctx = nullptr;
    ggml_cgraph *  g   = nullptr;
    explicit graph_of(std::initializer_list<ggml_tensor *> nodes) {
        ggml_init_params p = { ggml_graph_overhead(), nullptr, true };
        ctx = ggml_init(p);
        g   = ggml_new_graph(ctx);
        for (ggml_tensor * t : nodes) if (t) ggml_build_forward_expand(g, t);   // none where the case is skipped
    }
    ~graph_of() { ggml_free(ctx); }
};

void optimize(ggml_backend_t b, ggml_cgraph * g) {
    ASSERT_NE(b->iface.graph_optimize, nullptr) << "the backend offers no graph_optimize";
#if XDNA_HAS_GRAPH_OPTIMIZE_PARAMS
    ggml_backend_graph_optimize_params params = { [](void *, ggml_tensor *, ggml_tensor *) {}, nullptr };
    b->iface.graph_optimize(b, g, &params);
#else
    b->iface.graph_optimize(b, g);
#endif
}

std::vector<uint8_t> bytes_of(const ggml_tensor * t) {
    std::vector<uint8_t> out(ggml_nbytes(t));
    ggml_backend_tensor_get(const_cast<ggml_tensor *>(t), out.data(), 0, out.size());
    return out;
}

constexpr int64_t kin = 1024, m = 512, n = 64;

// The pair computed alone, on a backend that was handed nothing else: the reference for its results.
std::vector<std::vector<uint8_t>> pair_alone(ahead_case & ac) {
    ggml_backend_t b = ggml_backend_dev_init(load_backends().xdna_dev, nullptr);
    const auto out = run_graph(b, { ac.v, ac.k });
    ggml_backend_free(b);
    return out;
}

// The head start the planner learned for the shape begun ahead, in seconds, from its line in the report ("... begun
// ahead: ... begun T ahead"): the last such line; -1 without one.
double head_start_reported() {
    const char * path = getenv("GGML_XDNA_REPORT");
    std::ifstream f(path ? path : "");
    const std::regex re("begun ahead: .* begun ([0-9.]+) (ns|us|ms|s) ahead");
    std::string line;
    std::smatch mt;
    double s = -1.0;
    while (std::getline(f, line)) {
        if (!std::regex_search(line, mt, re)) continue;
        const std::string unit = mt[2];
        s = std::stod(mt[1]) * (unit == "ns" ? 1e-9 : unit == "us" ? 1e-6 : unit == "ms" ? 1e-3 : 1.0);
    }
    return s;
}

// Each test: the case, the pair's results computed alone, the report emptied; the splits of a graph (Q, then the pair;
// another multiply's graph for the tests that hand it over in between).
class npu_ahead : public ::testing::Test {
  protected:
    ahead_case ac{ kin, m, n };
    graph_of   g1{ ac.q }, g2{ ac.v, ac.k }, g3{ ac.other };
    std::vector<std::vector<uint8_t>> alone;

    void SetUp() override {
        ASSERT_NE(load_backends().xdna_dev, nullptr) << "the plugin did not load";
        if (!ac.skip.empty()) GTEST_SKIP() << ac.skip;
        alone = pair_alone(ac);
        if (const char * report = getenv("GGML_XDNA_REPORT")) std::remove(report);
    }
    // b handed both splits (graph_optimize), as the scheduler does, then Q computed: the pair begun ahead
    void compute_q(ggml_backend_t b) {
        optimize(b, g1.g);
        optimize(b, g2.g);
        ASSERT_EQ(ggml_backend_graph_compute(b, g1.g), GGML_STATUS_SUCCESS);
    }
    // the pair's turn on b; its results equal to those of the pair alone
    void compute_pair_as_alone(ggml_backend_t b) {
        ASSERT_EQ(ggml_backend_graph_compute(b, g2.g), GGML_STATUS_SUCCESS);
        EXPECT_TRUE(bytes_of(ac.v) == alone[0]) << "V differs from the pair computed alone";
        EXPECT_TRUE(bytes_of(ac.k) == alone[1]) << "K differs from the pair computed alone";
        EXPECT_TRUE(any_nonzero(bytes_of(ac.v)));
    }
};

}  // namespace

TEST_F(npu_ahead, the_pair_begun_ahead_is_written_at_its_turn_and_computes_what_it_does_alone) {
    ggml_backend_t xdna = ggml_backend_dev_init(load_backends().xdna_dev, nullptr);
    compute_q(xdna);
    // another tensor's data where the pair's results go, until the pair's turn; the NPU's rows (a few ms of emulated
    // work in exact mode, 0.1-0.3 s with Q's weight converted under the sanitizers) are long done when it is looked at
    // again
    const std::vector<float> other_data(size_t(m * n), 7.0f);
    ggml_backend_tensor_set(ac.v, other_data.data(), 0, ggml_nbytes(ac.v));
    ggml_backend_tensor_set(ac.k, other_data.data(), 0, ggml_nbytes(ac.k));
    const std::vector<uint8_t> before = bytes_of(ac.v);
    const double wait_s = 1.0;
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
    EXPECT_TRUE(bytes_of(ac.v) == before && bytes_of(ac.k) == before) << "the NPU wrote the pair's results before its turn";
    compute_pair_as_alone(xdna);
    ggml_backend_free(xdna);   // writes the report

    const long long npu = npu_rows_expected(m);
    EXPECT_EQ(reported("([0-9]+) begun ahead"), npu > 0 ? 2 : 0) << "multiplies begun ahead, in the report";
    EXPECT_EQ(npu_rows_reported(), npu_rows_expected(2 * m) + 2 * npu) << "rows the NPU computed: Q's and the pair's";
    if (npu > 0) {
        // the first multiply begun ahead in this process: its head start is the wait's and more; the NPU's own time
        // for Q and the pair together is less than that wait, which it leaves out (counted in, it would be more)
        const double head = head_start_reported();
        EXPECT_GE(head, wait_s) << "the head start, in the planner's line";
        const std::string sum = last_report_line();
        std::smatch mt;
        ASSERT_TRUE(std::regex_search(sum, mt, std::regex("npu: [0-9]+ rows, ([0-9.]+) s"))) << sum;
        EXPECT_LT(std::stod(mt[1]), head) << "the NPU's time counts its wait for the pair's turn: " << sum;
    }
}

TEST_F(npu_ahead, another_multiply_first_drops_what_was_begun_ahead) {
    ggml_backend_t xdna = ggml_backend_dev_init(load_backends().xdna_dev, nullptr);
    compute_q(xdna);
    ASSERT_EQ(ggml_backend_graph_compute(xdna, g3.g), GGML_STATUS_SUCCESS);   // not the pair: what was begun is dropped
    poison(ac.v);
    poison(ac.k);
    compute_pair_as_alone(xdna);
    ggml_backend_free(xdna);
    EXPECT_EQ(reported("([0-9]+) begun ahead"), 0) << "nothing begun ahead was used";
}

// A graph that stops between Q and the pair (an abort) leaves the pair begun ahead, and the NPU worker its holder's;
// another backend (another llama.cpp context) computing on the same thread drops it instead of waiting for it for good.
TEST_F(npu_ahead, another_backend_on_the_thread_drops_it_instead_of_waiting) {
    ggml_backend_t a = ggml_backend_dev_init(load_backends().xdna_dev, nullptr);
    ggml_backend_t b = ggml_backend_dev_init(load_backends().xdna_dev, nullptr);
    compute_q(a);   // the pair begun ahead, then no turn for it
    ASSERT_EQ(ggml_backend_graph_compute(b, g3.g), GGML_STATUS_SUCCESS);   // returns: the other backend dropped it
    poison(ac.v);
    poison(ac.k);
    compute_pair_as_alone(a);
    ggml_backend_free(b);
    ggml_backend_free(a);
}
