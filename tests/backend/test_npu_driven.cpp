// The NPU driven by the CPU worker's team between slices of its rows (XDNA_TEST_TEAM_DRIVES, set by CTest with
// the share), on the emulated NPU in exact mode, for a multiply, a pair of multiplies of one input and a mixture of
// experts, each large enough that the NPU has more launches than runs in flight (so that the team takes results and
// starts launches between its slices):
// - the CPU worker's rows are the stock CPU's, bit for bit, and the whole result matches it within test-backend-ops'
//   tolerance for MUL_MAT (NMSE 5e-4);
// - where CTest runs the same cases with the NPU worker's own thread first (XDNA_TEST_DIGESTS names the file they
//   share), the team-driven results are those, byte for byte: who takes a result never changes what it is;
// - the report says the team drove the NPU, and that it did not where the NPU worker's thread drove it.
// (The emulator's exact arithmetic is far slower than the CPU's rows, so here the NPU's runs end after the CPU's last
// slice and the team takes their results at the end; test-npu-resident's npu_driven plays the boundaries itself.)
#include "repacked_case.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>

using namespace xdna_test;

namespace {

// FNV-1a over the bytes of a result
uint64_t digest(const std::vector<uint8_t> & bytes) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
    return h;
}

bool team_drives() {
    const char * v = getenv("XDNA_TEST_TEAM_DRIVES");
    return v && std::string(v) == "1";
}

// The digests file: "name digest" lines. The run with the NPU worker's thread writes it, the team-driven runs read it.
std::map<std::string, uint64_t> read_digests() {
    std::map<std::string, uint64_t> out;
    const char * path = getenv("XDNA_TEST_DIGESTS");
    std::ifstream f(path ? path : "");
    std::string name;
    unsigned long long d;
    while (f >> name >> d) out[name] = d;
    return out;
}

// Writes this result's digest (the thread-driven run), or checks it against the one written (the team-driven runs).
void check_digest(const std::string & name, const std::vector<uint8_t> & got) {
    const char * path = getenv("XDNA_TEST_DIGESTS");
    if (!path) return;
    const std::string key = name + "_" + (getenv("GGML_XDNA_NPU_SHARE") ? getenv("GGML_XDNA_NPU_SHARE") : "auto") +
                            (getenv("GGML_XDNA_NPU_W8") ? std::string("_w8") : std::string());
    if (!team_drives()) {
        std::ofstream(path, std::ios::app) << key << " " << (unsigned long long) digest(got) << "\n";
        return;
    }
    const auto all = read_digests();
    const auto it = all.find(key);
    ASSERT_NE(it, all.end()) << key << ": no result of the NPU worker's own thread to compare with (" << path << ")";
    EXPECT_EQ(it->second, digest(got)) << key << ": the team-driven result differs from the NPU worker thread's";
}

// From the last report line: the runs the CPU worker's team drove (0 where the clause is missing: the NPU worker's
// thread drove them).
long long driven_reported() {
    return reported("driven by the CPU's team in ([0-9]+) runs, ([0-9]+) results taken");
}

void expect_driven(const std::string & name) {
    const long long runs = driven_reported();
    if (team_drives()) EXPECT_GT(runs, 0) << name << ": the report does not say the team drove the NPU";
    else EXPECT_EQ(runs, 0) << name << ": the report says the team drove the NPU";
}

class npu_driven : public ::testing::TestWithParam<case_t> {};

}  // namespace

TEST_P(npu_driven, the_team_driven_npu_computes_what_its_thread_does) {
    const case_t c = GetParam();
    ASSERT_NE(load_backends().xdna_dev, nullptr) << "the plugin did not load";
    repacked_case rc(c);
    if (!rc.skip.empty()) GTEST_SKIP() << rc.skip;
    const std::vector<uint8_t> got = expect_as_stock(c, rc);
    check_digest(name_of(c), got);
    expect_driven(name_of(c));
}

INSTANTIATE_TEST_SUITE_P(
    shapes, npu_driven,
    ::testing::Values(case_t{ GGML_TYPE_Q4_0, 2048, 2048, 64, 0 }, case_t{ GGML_TYPE_Q4_0, 1024, 1024, 64, 8 }),
    [](const ::testing::TestParamInfo<case_t> & i) { return name_of(i.param); });

TEST(npu_driven_pair, a_team_driven_pair_computes_what_its_thread_does) {
    ASSERT_NE(load_backends().xdna_dev, nullptr) << "the plugin did not load";
    const int64_t k = 1024, m = 1536, n = 77;
    pair_case pc(GGML_TYPE_Q4_0, k, m, n, true);
    if (!pc.skip.empty()) GTEST_SKIP() << pc.skip;
    const auto got = expect_pair_as_stock(pc, m);
    for (int i = 0; i < 2; ++i) check_digest("pair" + std::to_string(i), got[i]);
    expect_driven("pair");
}
