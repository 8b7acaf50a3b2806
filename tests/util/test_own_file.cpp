// The files a user names (state, report, trace): only regular files are read or written, a file the plugin did not
// write is never replaced or appended to, no open waits on a FIFO, reads are bounded, write errors come back.
// Every victim is a file of the test's own, in a temporary folder made for it.
#include "util/own_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace xdna;

namespace {

struct temp_dir {
    std::string path;
    temp_dir() {
        std::string t = ::testing::TempDir() + "xdna_own_file_XXXXXX";
        path = mkdtemp(&t[0]) ? t : "";
    }
    ~temp_dir() { if (!path.empty()) (void) system(("rm -rf '" + path + "'").c_str()); }
    std::string operator/(const std::string & name) const { return path + "/" + name; }
};

std::string slurp(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void put(const std::string & path, const std::string & data) {
    std::ofstream(path, std::ios::binary) << data;
}

bool mine(const std::string & head) { return head.rfind("MINE\n", 0) == 0; }

bool write_text(FILE * f, const std::string & t) { return fwrite(t.data(), 1, t.size(), f) == t.size(); }

// Bytes that are not the plugin's: a GGUF's magic and some binary.
const std::string victim_bytes = std::string("GGUF\x03\0\0\0", 8) + std::string(5000, '\x7f') + "end";

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(own_file, a_file_it_did_not_write_is_left_byte_for_byte) {
    temp_dir d;
    const std::string victim = d / "model.gguf";
    put(victim, victim_bytes);
    std::string why;
    EXPECT_FALSE(replace_own_file(victim, mine, [](FILE * f) { return write_text(f, "MINE\nnew\n"); }, &why));
    EXPECT_NE(why.find("not a file ggml-xdna wrote"), std::string::npos) << why;
    EXPECT_FALSE(append_own_file(victim, mine, "MINE\nmore\n", &why));
    EXPECT_NE(why.find("not a file ggml-xdna wrote"), std::string::npos) << why;
    EXPECT_EQ(slurp(victim), victim_bytes);
    EXPECT_EQ(why.find('\n'), std::string::npos);
}

TEST(own_file, its_own_file_an_empty_one_or_none_is_written) {
    temp_dir d;
    std::string why;
    const std::string p = d / "state.txt";
    ASSERT_TRUE(replace_own_file(p, mine, [](FILE * f) { return write_text(f, "MINE\none\n"); }, &why)) << why;
    ASSERT_TRUE(replace_own_file(p, mine, [](FILE * f) { return write_text(f, "MINE\ntwo\n"); }, &why)) << why;
    EXPECT_EQ(slurp(p), "MINE\ntwo\n");
    const std::string r = d / "report.txt";
    put(r, "");   // as mktemp leaves it
    ASSERT_TRUE(append_own_file(r, mine, "MINE\na\n", &why)) << why;
    ASSERT_TRUE(append_own_file(r, mine, "b\n", &why)) << why;
    EXPECT_EQ(slurp(r), "MINE\na\nb\n");
    const std::string absent = d / "new.txt";
    ASSERT_TRUE(append_own_file(absent, mine, "MINE\n", &why)) << why;
    EXPECT_EQ(slurp(absent), "MINE\n");
    // a link to its own file: the file is replaced, the link stays a link
    ASSERT_EQ(symlink(p.c_str(), (d / "link").c_str()), 0);
    ASSERT_TRUE(replace_own_file(d / "link", mine, [](FILE * f) { return write_text(f, "MINE\nthree\n"); }, &why));
    struct stat sb;
    ASSERT_EQ(lstat((d / "link").c_str(), &sb), 0);
    EXPECT_TRUE(S_ISLNK(sb.st_mode));
    EXPECT_EQ(slurp(p), "MINE\nthree\n");
}

// A FIFO with nobody at its other end blocks a plain open for ever: every call must return at once.
TEST(own_file, a_fifo_is_refused_without_waiting) {
    temp_dir d;
    const std::string fifo = d / "fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    const auto t0 = std::chrono::steady_clock::now();
    std::string text, why;
    EXPECT_EQ(read_regular_file(fifo, 1 << 20, &text, &why), file_read::refused);
    EXPECT_NE(why.find("FIFO"), std::string::npos) << why;
    EXPECT_FALSE(replace_own_file(fifo, mine, [](FILE * f) { return write_text(f, "MINE\n"); }, &why));
    EXPECT_FALSE(append_own_file(fifo, mine, "MINE\n", &why));
    EXPECT_NE(why.find("FIFO"), std::string::npos) << why;
    EXPECT_LT(seconds_since(t0), 1.0);
    struct stat sb;
    ASSERT_EQ(lstat(fifo.c_str(), &sb), 0);
    EXPECT_TRUE(S_ISFIFO(sb.st_mode)) << "the FIFO was replaced";
}

// A device node of the test's own (as root: /dev/full's numbers, in the temporary folder), and a folder.
TEST(own_file, a_device_or_a_folder_is_refused_and_kept) {
    temp_dir d;
    std::string text, why;
    EXPECT_EQ(read_regular_file(d.path, 1 << 20, &text, &why), file_read::refused);
    EXPECT_NE(why.find("folder"), std::string::npos) << why;
    EXPECT_FALSE(replace_own_file(d.path, mine, [](FILE * f) { return write_text(f, "MINE\n"); }, &why));
    const std::string dev = d / "full";
    if (mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) GTEST_SKIP() << "mknod needs root";
    EXPECT_EQ(read_regular_file(dev, 1 << 20, &text, &why), file_read::refused);
    EXPECT_NE(why.find("character device"), std::string::npos) << why;
    EXPECT_FALSE(replace_own_file(dev, mine, [](FILE * f) { return write_text(f, "MINE\n"); }, &why));
    EXPECT_FALSE(append_own_file(dev, mine, "MINE\n", &why));
    struct stat sb;
    ASSERT_EQ(lstat(dev.c_str(), &sb), 0);
    EXPECT_TRUE(S_ISCHR(sb.st_mode)) << "the device node was replaced";
}

TEST(own_file, reads_are_bounded) {
    temp_dir d;
    const std::string big = d / "big";
    put(big, std::string(4097, 'x'));
    std::string text, why;
    EXPECT_EQ(read_regular_file(big, 4096, &text, &why), file_read::refused);
    EXPECT_NE(why.find("larger than 4096 bytes"), std::string::npos) << why;
    EXPECT_TRUE(text.empty());
    EXPECT_EQ(read_regular_file(big, 4097, &text, &why), file_read::ok);
    EXPECT_EQ(text.size(), 4097u);
    EXPECT_EQ(read_regular_file(d / "absent", 10, &text, &why), file_read::absent);
}

// A write that fails (a file size limit, as a full disk would): one sentence, and the old file whole. Run in a
// child: the limit and the ignored SIGXFSZ are process-wide.
TEST(own_file, a_failed_write_says_so_and_keeps_the_old_file) {
    temp_dir d;
    const std::string p = d / "state.txt";
    const std::string old = "MINE\nold\n";
    put(p, old);
    const pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        rlimit lim = { 1024, 1024 };
        setrlimit(RLIMIT_FSIZE, &lim);
        std::string why;
        const std::string big = "MINE\n" + std::string(8192, 'y');
        const bool r1 = replace_own_file(p, mine, [&](FILE * f) { return write_text(f, big); }, &why);
        const bool said1 = why.find("cannot be written: File too large") != std::string::npos;
        const bool r2 = append_own_file(p, mine, big, &why);
        const bool said2 = why.find("cannot be written") != std::string::npos;
        _exit(!r1 && said1 && !r2 && said2 ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the failed writes were not reported";
    const std::string after = slurp(p);
    EXPECT_EQ(after.substr(0, old.size()), old) << "the old file was not kept";
    EXPECT_EQ(system(("test $(ls -A '" + d.path + "' | wc -l) -eq 1").c_str()), 0) << "a temporary file was left";
}
