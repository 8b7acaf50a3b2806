// xdna-emu-kernels: writes the software XDNA1's kernel set (one emulator xclbin per design, one instruction stream
// per block) and the kernel manifest that lists them, so a default build has NPU kernels with nothing installed.
//
//   xdna-emu-kernels --out DIR [--tokens 64,128,256,512] [--rows 256,512,1024] [--k 1024] [--k-complete 2048,4096]
//                    [--no-int8] [--with-mixed]
//
// The set mirrors what kernels/build-kernels.sh builds with mlir-aie for a real NPU: bf16 x bf16 -> f32 and
// i8 x i8 -> i32 designs with K = 1024, each in a narrow tile (m = 16: every block) and a wide one (m = 64: blocks of
// 256 tokens and more), with an instruction stream per (tokens, rows) block.
#include "os/os.h"
#include "xdna_emu/emu_format.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

void die(const std::string& msg) {
    std::fprintf(stderr, "xdna-emu-kernels: %s\n", msg.c_str());
    std::exit(1);
}

std::vector<uint32_t> parse_list(const char* opt, const char* s) {
    std::vector<uint32_t> out;
    std::string cur;
    for (const char* p = s;; ++p) {
        if (*p == ',' || *p == '\0') {
            char* end = nullptr;
            const unsigned long v = std::strtoul(cur.c_str(), &end, 10);
            if (cur.empty() || *end || v == 0 || v > (1u << 20)) die(std::string(opt) + ": bad value '" + cur + "'");
            out.push_back(static_cast<uint32_t>(v));
            cur.clear();
            if (!*p) break;
        } else {
            cur += *p;
        }
    }
    return out;
}

void make_dir(const std::string& d) {
    std::string why;
    if (!xdna::os::make_dir(d, &why)) die("cannot create folder '" + d + "': " + why);
}

void write_file(const std::string& path, const void* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) die("cannot write '" + path + "'");
}

// Little-endian words, as aiecc's insts.bin.
void write_words(const std::string& path, const std::vector<uint32_t>& words) {
    std::vector<unsigned char> bytes;
    for (uint32_t w : words) {
        for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<unsigned char>(w >> (8 * i)));
    }
    write_file(path, bytes.data(), bytes.size());
}

} // namespace

int main(int argc, char** argv) {
    std::string out;
    std::vector<uint32_t> tokens = {64, 128, 256, 512}, rows = {256, 512, 1024}, ks = {1024}, k_complete;
    bool int8 = true, mixed = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--out") out = value();
        else if (a == "--tokens") tokens = parse_list("--tokens", value());
        else if (a == "--rows") rows = parse_list("--rows", value());
        else if (a == "--k") ks = parse_list("--k", value());
        else if (a == "--k-complete") k_complete = parse_list("--k-complete", value());
        else if (a == "--no-int8") int8 = false;
        else if (a == "--with-mixed") mixed = true;
        else die("unknown option '" + a + "' (see the comment at the top of emu_kernels.cpp)");
    }
    if (out.empty()) die("--out DIR is required");
    make_dir(out);

    // Per data type a design of the narrow tile (m = 16), which serves blocks of every token size, and one of the wide
    // tile (m = 64) for blocks of 256 tokens and more, where the silicon model finds it faster (docs/emulator.md)
    struct planned {
        xdna_emu::design d;
        std::vector<uint32_t> tokens;
    };
    std::vector<planned> designs;
    auto add = [&](const std::string& name, xdna_emu::dtype a, xdna_emu::dtype b, xdna_emu::dtype c, uint32_t tile_m,
                   uint32_t tile_k, uint32_t tile_n, uint32_t k) {
        planned p;
        p.d.name = name;
        p.d.a = a;
        p.d.b = b;
        p.d.c = c;
        p.d.tile_m = tile_m;
        p.d.tile_k = tile_k;
        p.d.tile_n = tile_n;
        p.d.columns = 4;
        p.d.k = k;
        const std::string bad = xdna_emu::design_check(p.d);
        if (!bad.empty()) die("design " + p.d.name + ": " + bad);
        for (uint32_t t : tokens) {
            if (t % (4 * tile_m) == 0) p.tokens.push_back(t);
        }
        if (!p.tokens.empty()) designs.push_back(p);
    };
    using xdna_emu::dtype;
    for (uint32_t k : ks) {
        const std::string sk = "_k" + std::to_string(k);
        add("bf16" + sk, dtype::bf16, dtype::bf16, dtype::f32, 16, 64, 64, k);
        add("bf16" + sk + "_m64", dtype::bf16, dtype::bf16, dtype::f32, 64, 64, 32, k);
    }
    for (uint32_t k : k_complete) add("bf16_k" + std::to_string(k), dtype::bf16, dtype::bf16, dtype::f32, 16, 64, 64, k);
    if (int8) {
        for (uint32_t k : ks) {
            const std::string sk = "_k" + std::to_string(k);
            add("i8" + sk, dtype::i8, dtype::i8, dtype::i32, 16, 128, 64, k);
            add("i8" + sk + "_m64", dtype::i8, dtype::i8, dtype::i32, 64, 64, 64, k);
        }
    }
    if (mixed) for (uint32_t k : ks) add("bf16i8_k" + std::to_string(k), dtype::bf16, dtype::i8, dtype::f32, 16, 64, 64, k);

    using json = nlohmann::ordered_json;
    json jdesigns = json::array();
    size_t blocks = 0;
    for (const auto& p : designs) {
        const xdna_emu::design& d = p.d;
        const std::string xclbin = d.name + ".xclbin";
        const std::string text = xdna_emu::xclbin_text(d);
        write_file(out + "/" + xclbin, text.data(), text.size());
        make_dir(out + "/" + d.name);
        json jblocks = json::array();
        for (uint32_t t : p.tokens) {
            for (uint32_t r : rows) {
                const std::string bad = xdna_emu::design_check_block(d, t, r);
                if (!bad.empty()) die("design " + d.name + ", block " + std::to_string(t) + "x" + std::to_string(r) + ": " + bad);
                const std::string base = "t" + std::to_string(t) + "_r" + std::to_string(r);
                const std::string instr = d.name + "/" + base + ".bin";
                write_words(out + "/" + instr, xdna_emu::instr_encode(d, t, r));
                jblocks.push_back({{"name", d.name + "_" + base}, {"tokens", t}, {"rows", r}, {"instr", instr}});
                ++blocks;
            }
        }
        jdesigns.push_back({{"name", d.name},
                            {"xclbin", xclbin},
                            {"kernel", d.kernel_name},
                            {"a", xdna_emu::dtype_name(d.a)},
                            {"b", xdna_emu::dtype_name(d.b)},
                            {"c", xdna_emu::dtype_name(d.c)},
                            {"b_layout", "nk"},
                            {"k", d.k},
                            {"tile", {{"m", d.tile_m}, {"k", d.tile_k}, {"n", d.tile_n}, {"columns", d.columns}}},
                            {"blocks", jblocks}});
    }
    const json manifest = {{"format", "ggml-xdna-kernels"},
                           {"version", 1},
                           {"target", "npu1"},
                           {"emulator", true},
                           {"comment", "software XDNA1 kernel set written by xdna-emu-kernels; runs only on the emulator"},
                           {"designs", jdesigns}};
    const std::string text = manifest.dump(2) + "\n";
    write_file(out + "/manifest.json", text.data(), text.size());
    std::printf("xdna-emu-kernels: %zu designs, %zu blocks -> %s/manifest.json\n", designs.size(), blocks, out.c_str());
    return 0;
}
