// The kernel manifest: the build's emulator kernel set parses, and every kind of mistake in a manifest is one
// clear npu_error naming the file and the field.
#include "npu_manifest.h"
#include "npu_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <unistd.h>

using xdna::npu_dtype;
using xdna::npu_errc;
using xdna::npu_error;
using xdna::npu_manifest;
using json = nlohmann::json;

namespace {

json emulator_manifest() {
    std::ifstream in(xdna_test::manifest_path());
    return json::parse(in);
}

// Writes the edited manifest next to the real one (so relative file names still resolve) and loads it.
std::string load_error(const std::function<void(json&)>& edit, npu_errc* code = nullptr) {
    json doc = emulator_manifest();
    edit(doc);
    // Tests run in parallel processes: one file name per process.
    const std::string path = xdna_test::kernels_dir() + "/test_manifest_edit_" + std::to_string(getpid()) + ".json";
    {
        std::ofstream out(path);
        out << doc.dump(1);
    }
    try {
        npu_manifest::load(path);
    } catch (const npu_error& e) {
        if (code) *code = e.code();
        std::remove(path.c_str());
        return e.what();
    }
    std::remove(path.c_str());
    return "";
}

} // namespace

TEST(NpuManifest, EmulatorKernelSetParses) {
    const npu_manifest m = npu_manifest::load(xdna_test::manifest_path());
    EXPECT_TRUE(m.emulator_kernels());
    // bf16 and int8, each in the narrow tile (4 token sizes x 3 row sizes) and the wide one (256 and 512 tokens)
    ASSERT_EQ(m.designs().size(), 4u);
    EXPECT_EQ(m.kernels().size(), 36u);
    const xdna::npu_kernel* k = m.find(npu_dtype::bf16, npu_dtype::bf16, 512, 1024, 512);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->c, npu_dtype::f32);
    EXPECT_EQ(k->a_bytes(), 512u * 1024 * 2);
    EXPECT_EQ(k->b_bytes(), 512u * 1024 * 2);
    EXPECT_EQ(k->c_bytes(), 512u * 512 * 4);
    EXPECT_EQ(m.design_of(*k).name, "bf16_k1024");
    EXPECT_EQ(m.design_of(*k).tile.m, 16);
    EXPECT_EQ(m.design_of(*k).tile.k, 64);
    EXPECT_EQ(m.design_of(*k).tile.n, 64);
    EXPECT_EQ(m.design_of(*k).tile.columns, 4);
    const xdna::npu_kernel* q = m.find(npu_dtype::i8, npu_dtype::i8, 64, 1024, 256);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->c, npu_dtype::i32);
    EXPECT_EQ(m.find(npu_dtype::bf16, npu_dtype::bf16, 100, 1024, 256), nullptr);
    const auto bf16 = m.kernels_for(npu_dtype::bf16, npu_dtype::bf16);
    ASSERT_EQ(bf16.size(), 18u);
    EXPECT_EQ(bf16.front()->tokens, 64);
    EXPECT_EQ(bf16.front()->rows, 256);
    EXPECT_EQ(bf16.back()->tokens, 512);
    EXPECT_EQ(bf16.back()->rows, 1024);
    EXPECT_TRUE(m.kernels_for(npu_dtype::bf16, npu_dtype::i8).empty());
    // Blocks of one design share its xclbin, so one hardware context.
    for (const auto& d : m.designs()) {
        EXPECT_EQ(d.kernels.size(), d.tile.m == 16 ? 12u : 6u) << d.name;
        for (int ki : d.kernels) EXPECT_EQ(m.kernels()[ki].design, d.index);
    }
}

TEST(NpuManifest, MissingManifestFile) {
    try {
        npu_manifest::load(xdna_test::kernels_dir() + "/no-such-manifest.json");
        FAIL() << "no error";
    } catch (const npu_error& e) {
        EXPECT_EQ(e.code(), npu_errc::manifest);
        EXPECT_NE(std::string(e.what()).find("no-such-manifest.json"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
    }
}

TEST(NpuManifest, NotJson) {
    const std::string path = xdna_test::kernels_dir() + "/test_not_json.json";
    {
        std::ofstream out(path);
        out << "{ \"format\": ";
    }
    try {
        npu_manifest::load(path);
        FAIL() << "no error";
    } catch (const npu_error& e) {
        EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
}

TEST(NpuManifest, MissingXclbinFileNamesFieldAndFile) {
    npu_errc code{};
    const std::string msg = load_error([](json& d) { d["designs"][1]["xclbin"] = "gone.xclbin"; }, &code);
    EXPECT_EQ(code, npu_errc::manifest);
    EXPECT_NE(msg.find("test_manifest_edit_"), std::string::npos) << msg;
    EXPECT_NE(msg.find("designs[1].xclbin"), std::string::npos) << msg;
    EXPECT_NE(msg.find("gone.xclbin"), std::string::npos) << msg;
}

TEST(NpuManifest, MissingInstructionFile) {
    const std::string msg = load_error([](json& d) { d["designs"][0]["blocks"][3]["instr"] = "bf16_k1024/none.bin"; });
    EXPECT_NE(msg.find("designs[0].blocks[3].instr"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
}

TEST(NpuManifest, BadShapes) {
    std::string msg = load_error([](json& d) { d["designs"][0]["blocks"][0]["tokens"] = 0; });
    EXPECT_NE(msg.find("designs[0].blocks[0].tokens: must be a positive integer, got 0"), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["blocks"][0]["rows"] = 100; });
    EXPECT_NE(msg.find("designs[0].blocks[0].rows: must be a multiple of 256 (columns x tile n), got 100"),
              std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["blocks"][0]["tokens"] = 32; });
    EXPECT_NE(msg.find("designs[0].blocks[0].tokens: must be a multiple of 64 (4 rows x tile m), got 32"),
              std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0].erase("tile"); });
    EXPECT_NE(msg.find("designs[0].tile: missing"), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["tile"]["columns"] = 5; });
    EXPECT_NE(msg.find("designs[0].tile.columns: npu1 has 4 usable columns"), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["tile"]["k"] = 44; });
    EXPECT_NE(msg.find("designs[0].tile.k: must be a multiple of 8"), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["tile"]["k"] = 40; });
    EXPECT_NE(msg.find("the design's k 1024 is not a multiple of it (40)"), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["k"] = "1024"; });
    EXPECT_NE(msg.find("designs[0].k: must be a positive integer"), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["blocks"][1]["tokens"] = 64; d["designs"][0]["blocks"][1]["rows"] = 256; });
    EXPECT_NE(msg.find("designs[0].blocks[1]: a second block of 64 tokens x 256 rows"), std::string::npos) << msg;
}

TEST(NpuManifest, UnknownTypesAndCombinations) {
    std::string msg = load_error([](json& d) { d["designs"][0]["a"] = "fp8"; });
    EXPECT_NE(msg.find("designs[0].a: unknown data type \"fp8\""), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["c"] = "i32"; });
    EXPECT_NE(msg.find("designs[0].c: unsupported combination bf16 x bf16 -> i32"), std::string::npos) << msg;
    msg = load_error([](json& d) { d["designs"][0]["b_layout"] = "kn"; });
    EXPECT_NE(msg.find("designs[0].b_layout"), std::string::npos) << msg;
}

TEST(NpuManifest, StructureErrors) {
    EXPECT_NE(load_error([](json& d) { d["format"] = "other"; }).find("format"), std::string::npos);
    EXPECT_NE(load_error([](json& d) { d["version"] = 2; }).find("version: must be 1"), std::string::npos);
    EXPECT_NE(load_error([](json& d) { d["designs"] = json::array(); }).find("designs: must be a non-empty array"),
              std::string::npos);
    EXPECT_NE(load_error([](json& d) { d["designs"][1]["name"] = "bf16_k1024"; }).find("duplicate design name"),
              std::string::npos);
    EXPECT_NE(load_error([](json& d) { d["designs"][0]["blocks"][2]["name"] = d["designs"][0]["blocks"][0]["name"]; })
                  .find("duplicate kernel name"),
              std::string::npos);
    EXPECT_NE(load_error([](json& d) { d["designs"][0].erase("kernel"); }).find("designs[0].kernel: missing"),
              std::string::npos);
}
