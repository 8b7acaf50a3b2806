// The kernel manifest and the kernels' files as files: a FIFO, a folder or an oversized file is one npu_error that
// names the file, at once (a FIFO with no writer would block a plain read for ever).
#include "npu_error.h"
#include "npu_instr.h"
#include "npu_manifest.h"
#include "npu_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using xdna::npu_error;
using xdna::npu_manifest;

namespace {

// A name of this process's own under the kernel folder (tests run in parallel processes).
std::string own_path(const std::string & name) {
    return xdna_test::kernels_dir() + "/test_npu_files_" + std::to_string(getpid()) + "_" + name;
}

// The message of loading `f`, which must fail within a second.
template <typename F> std::string error_of(F f) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string msg = "no error";
    try {
        f();
    } catch (const npu_error & e) {
        msg = e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0) << msg;
    return msg;
}

}  // namespace

TEST(NpuFiles, ManifestFifoAndFolderAreRefusedNamingTheFile) {
    const std::string fifo = own_path("manifest.fifo");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    std::string msg = error_of([&] { npu_manifest::load(fifo); });
    EXPECT_NE(msg.find(fifo), std::string::npos) << msg;
    EXPECT_NE(msg.find("FIFO, not a regular file"), std::string::npos) << msg;
    std::remove(fifo.c_str());

    msg = error_of([&] { npu_manifest::load(xdna_test::kernels_dir()); });
    EXPECT_NE(msg.find("'" + xdna_test::kernels_dir() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("folder, not a regular file"), std::string::npos) << msg;
}

TEST(NpuFiles, OversizedManifestIsRefused) {
    const std::string big = own_path("big.json");
    {
        std::ofstream out(big);
        out << std::string((4 << 20) + 1, ' ');
    }
    const std::string msg = error_of([&] { npu_manifest::load(big); });
    EXPECT_NE(msg.find(big), std::string::npos) << msg;
    EXPECT_NE(msg.find("larger than"), std::string::npos) << msg;
    std::remove(big.c_str());
}

TEST(NpuFiles, KernelFilesMustBeRegularFiles) {
    std::ifstream in(xdna_test::manifest_path());
    nlohmann::json doc = nlohmann::json::parse(in);
    const std::string fifo = own_path("instr.fifo");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    doc["designs"][0]["blocks"][0]["instr"] = fifo;
    const std::string edited = own_path("manifest.json");
    std::ofstream(edited) << doc.dump(1);
    const std::string msg = error_of([&] { npu_manifest::load(edited); });
    EXPECT_NE(msg.find("designs[0].blocks[0].instr"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fifo + "' is not a regular file"), std::string::npos) << msg;
    // read directly, as the runtime does
    const std::string msg2 = error_of([&] { xdna::npu_load_instr(fifo); });
    EXPECT_NE(msg2.find("instruction file '" + fifo + "'"), std::string::npos) << msg2;
    EXPECT_NE(msg2.find("FIFO"), std::string::npos) << msg2;
    std::remove(fifo.c_str());
    std::remove(edited.c_str());
}
