// Instruction stream files: the form (raw little-endian words or hex text) is read from the content, not the name.
// mlir-aie's makefile-common names the file insts_<suffix>.txt while aiecc writes raw words into it, so a loader
// that trusted the name would reject every real design.
#include "npu_error.h"
#include "npu_instr.h"
#include "npu_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string tmp_path(const std::string& name) {
    return ::testing::TempDir() + "xdna_instr_" + std::to_string(getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::string& data) {
    std::ofstream out(path, std::ios::binary);
    out << data;
}

// The words as little-endian bytes, independently of the loader.
std::string as_binary(const std::vector<uint32_t>& w) {
    std::string s;
    for (uint32_t x : w) {
        for (int b = 0; b < 4; ++b) s.push_back(static_cast<char>((x >> (8 * b)) & 0xFF));
    }
    return s;
}

std::string as_text(const std::vector<uint32_t>& w, bool prefix, const char* eol) {
    std::string s = std::string("# an instruction stream") + eol;
    char buf[16];
    for (uint32_t x : w) {
        std::snprintf(buf, sizeof buf, prefix ? "0x%08X" : "%08x", x);
        s += buf;
        s += eol;
    }
    return s + eol;
}

std::string load_error(const std::string& data, const std::string& name) {
    const std::string p = tmp_path(name);
    write_file(p, data);
    try {
        xdna::npu_load_instr(p);
    } catch (const xdna::npu_error& e) {
        std::remove(p.c_str());
        EXPECT_EQ(e.code(), xdna::npu_errc::kernel);
        return e.what();
    }
    std::remove(p.c_str());
    return "";
}

} // namespace

TEST(NpuInstr, FormFromContentNotName) {
    // A real stream of the build's kernel set, read byte by byte here (not through the loader).
    const std::string raw = read_all(xdna_test::kernels_dir() + "/bf16_k1024/t64_r256.bin");
    ASSERT_GT(raw.size(), 8u);
    ASSERT_EQ(raw.size() % 4, 0u);
    std::vector<uint32_t> expect(raw.size() / 4);
    for (size_t i = 0; i < expect.size(); ++i) {
        const auto* p = reinterpret_cast<const unsigned char*>(raw.data()) + 4 * i;
        expect[i] = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    }
    ASSERT_EQ(as_binary(expect), raw);
    const struct {
        const char* name;
        std::string data;
    } forms[] = {
        {"bin_as.bin", as_binary(expect)},
        {"bin_as.txt", as_binary(expect)},              // what aiecc writes under makefile-common's name
        {"text_as.txt", as_text(expect, false, "\n")},   // what older aiecc wrote
        {"text_as.bin", as_text(expect, false, "\n")},
        {"text_0x_crlf.txt", as_text(expect, true, "\r\n")},
        {"text_0x_crlf.bin", as_text(expect, true, "\r\n")},
    };
    for (const auto& f : forms) {
        const std::string p = tmp_path(f.name);
        write_file(p, f.data);
        std::vector<uint32_t> got;
        try {
            got = xdna::npu_load_instr(p);
        } catch (const xdna::npu_error& e) {
            ADD_FAILURE() << f.name << ": " << e.what();
        }
        std::remove(p.c_str());
        EXPECT_EQ(got, expect) << f.name;
    }
}

TEST(NpuInstr, ClearErrors) {
    // A binary file cut short names the form and the size.
    std::string msg = load_error(std::string("\x01\x00\x00\x00\x02\x00", 6), "short.txt");
    EXPECT_NE(msg.find("binary, size 6 bytes is not a whole number of 32-bit words"), std::string::npos) << msg;
    // A text file with a bad word names the line.
    msg = load_error("0x00000001\n0x123456789\n", "long.bin");
    EXPECT_NE(msg.find("hex text, line 2: not a 32-bit hex word"), std::string::npos) << msg;
    msg = load_error("00000001\nzz\n", "bad.txt");
    EXPECT_NE(msg.find("hex text, line 2"), std::string::npos) << msg;
    // Nothing in it.
    msg = load_error("# only a comment\n\n", "empty.txt");
    EXPECT_NE(msg.find("no instructions"), std::string::npos) << msg;
    msg = load_error("", "empty.bin");
    EXPECT_NE(msg.find("no instructions"), std::string::npos) << msg;
    // A file that is not there.
    try {
        xdna::npu_load_instr(tmp_path("missing.bin"));
        ADD_FAILURE() << "no error for a missing file";
    } catch (const xdna::npu_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot open file"), std::string::npos) << e.what();
    }
}

namespace {

// A hardware stream as aiecc lays it out (mlir-aie's AIETargetNPU): word 0 rows << 24 | generation << 16 | version,
// word 1 the geometry, word 2 the operation count, word 3 the size in bytes; then `ops` words of operations.
std::vector<uint32_t> hw_stream(uint32_t rows, uint32_t generation, size_t ops) {
    std::vector<uint32_t> w = {rows << 24 | generation << 16 | 1u << 8, 1u << 8 | 4u, uint32_t(ops / 2), 0};
    for (size_t i = 0; i < ops; ++i) w.push_back(uint32_t(0x80 + i));
    w[3] = uint32_t(w.size() * 4);
    return w;
}

// The header check on a stream read from a file, as the runtime does it for a hardware kernel set: "" when accepted.
std::string header_error(const std::string& data, const std::string& name) {
    const std::string p = tmp_path(name);
    write_file(p, data);
    std::string msg;
    try {
        xdna::npu_check_instr_header(xdna::npu_load_instr(p), "instruction file '" + p + "'");
    } catch (const xdna::npu_error& e) {
        EXPECT_EQ(e.code(), xdna::npu_errc::kernel);
        msg = e.what();
        EXPECT_NE(msg.find(p), std::string::npos) << "the file is not named: " << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    }
    std::remove(p.c_str());
    return msg;
}

} // namespace

TEST(NpuInstr, HardwareHeaderNpu1Accepted) {
    const std::vector<uint32_t> npu1 = hw_stream(6, 3, 40);
    ASSERT_EQ(npu1[0], 0x06030100u);
    EXPECT_EQ(header_error(as_binary(npu1), "npu1.bin"), "");
    EXPECT_EQ(header_error(as_text(npu1, true, "\n"), "npu1.txt"), "");
}

TEST(NpuInstr, HardwareHeaderOtherDeviceRefused) {
    // mlir-aie's env_setup.sh sets NPU2=1 on Strix / Krackan: a recipe that let it through built npu2 streams
    const std::string msg = header_error(as_binary(hw_stream(6, 4, 40)), "npu2.bin");
    EXPECT_NE(msg.find("0x06040100"), std::string::npos) << msg;
    EXPECT_NE(msg.find("npu2"), std::string::npos) << msg;
    EXPECT_NE(header_error(as_binary(hw_stream(6, 5, 40)), "gen5.bin").find("device generation 5"), std::string::npos);
}

TEST(NpuInstr, HardwareHeaderTruncatedRefused) {
    const std::string whole = as_binary(hw_stream(6, 3, 40));
    const std::string msg = header_error(whole.substr(0, whole.size() - 16), "cut.bin");
    EXPECT_NE(msg.find("the header gives the stream " + std::to_string(whole.size()) + " bytes, the file holds " +
                       std::to_string(whole.size() - 16) + " (truncated)"), std::string::npos) << msg;
    EXPECT_NE(header_error(whole.substr(0, 8), "header-only.bin").find("shorter than the 4-word header"),
              std::string::npos);
}

TEST(NpuInstr, EmulatorStreamsHaveTheirOwnFormat) {
    // The software XDNA1's streams start with their own magic ("XEMU", docs/emulator.md): the hardware header check
    // would refuse them, which is why the runtime applies it to hardware kernel sets only (and the emulator's set
    // loads: NpuRuntime tests)
    const std::string raw = read_all(xdna_test::kernels_dir() + "/bf16_k1024/t64_r256.bin");
    ASSERT_GE(raw.size(), 4u);
    EXPECT_EQ(raw.substr(0, 4), "XEMU");
    EXPECT_NE(header_error(raw, "xemu.bin"), "");
}
