// Parsing and checking the kernel manifest (see npu_manifest.h).
#include "npu_manifest.h"

#include "npu_error.h"

#include "os/os.h"
#include "util/own_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <utility>

namespace xdna {

namespace {

using json = nlohmann::json;

struct checker {
    std::string path;
    std::string dir;

    [[noreturn]] void fail(const std::string& field, const std::string& why) const {
        throw npu_error(npu_errc::manifest, "kernel manifest '" + path + "': " + field + ": " + why);
    }

    const json& member(const json& obj, const std::string& where, const char* key) const {
        if (!obj.contains(key)) {
            fail(where.empty() ? key : where + "." + key, "missing");
        }
        return obj[key];
    }

    std::string string_field(const json& obj, const std::string& where, const char* key) const {
        const json& v = member(obj, where, key);
        if (!v.is_string() || v.get<std::string>().empty()) {
            fail(where + "." + key, "must be a non-empty string, got " + v.dump());
        }
        return v.get<std::string>();
    }

    // `unit` names what the multiple is ("4 x tile m"), for the message
    int int_field(const json& obj, const std::string& where, const char* key, int multiple_of,
                  const std::string& unit = "") const {
        const json& v = member(obj, where, key);
        if (!v.is_number_integer() || v.get<long long>() <= 0 || v.get<long long>() > (1 << 24)) {
            fail(where + "." + key, "must be a positive integer, got " + v.dump());
        }
        const int x = v.get<int>();
        if (x % multiple_of) {
            fail(where + "." + key, "must be a multiple of " + std::to_string(multiple_of) +
                                        (unit.empty() ? "" : " (" + unit + ")") + ", got " + std::to_string(x));
        }
        return x;
    }

    npu_dtype dtype_field(const json& obj, const std::string& where, const char* key) const {
        const json& v = member(obj, where, key);
        npu_dtype t;
        if (!v.is_string() || !npu_dtype_parse(v.get<std::string>(), &t)) {
            fail(where + "." + key, "unknown data type " + v.dump() + " (known: bf16, i8, f32, i32)");
        }
        return t;
    }

    // Resolves a file named in the manifest (relative to the manifest's folder) and checks that it exists, is a
    // regular file (a FIFO or a device would block whoever reads it) and is no larger than any kernel file.
    std::string file_field(const json& obj, const std::string& where, const char* key) const {
        const std::string name = string_field(obj, where, key);
        const std::string full = (name[0] == '/' || dir.empty()) ? name : dir + "/" + name;
        const os::file_info st = os::stat_file(full);
        if (!st.exists) {
            fail(where + "." + key, "file '" + full + "' not found");
        }
        if (!st.regular) {
            fail(where + "." + key, "file '" + full + "' is not a regular file");
        }
        if (st.size > (uint64_t(256) << 20)) {
            fail(where + "." + key, "file '" + full + "' is larger than 256 MiB, more than any kernel file");
        }
        return full;
    }
};

} // namespace

// The manifest's JSON, read (a regular file of manifest size only: a FIFO or a device would block or never end) and
// parsed, its header checked.
static json npu_manifest_document(const std::string& path, const checker& ck) {
    std::string text, why;
    const file_read got = read_regular_file(path, size_t(4) << 20, &text, &why);
    if (got != file_read::ok) {
        throw npu_error(npu_errc::manifest, "kernel manifest '" + path + "': " +
                                                (got == file_read::absent ? "cannot open file" : why));
    }
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception& e) {
        throw npu_error(npu_errc::manifest, "kernel manifest '" + path + "': not valid JSON: " + e.what());
    }
    if (!doc.is_object()) {
        ck.fail("(top level)", "must be a JSON object");
    }
    if (ck.string_field(doc, "", "format") != "ggml-xdna-kernels") {
        ck.fail("format", "must be \"ggml-xdna-kernels\"");
    }
    if (!ck.member(doc, "", "version").is_number_integer() || doc["version"].get<int>() != 1) {
        ck.fail("version", "must be 1, got " + doc["version"].dump());
    }
    return doc;
}

// A design's data types and layout, checked: the combinations the NPU worker computes.
static void npu_manifest_types(const checker& ck, const json& jd, const std::string& dw, npu_design& d) {
    d.a = ck.dtype_field(jd, dw, "a");
    d.b = ck.dtype_field(jd, dw, "b");
    d.c = ck.dtype_field(jd, dw, "c");
    const bool ok = (d.a == npu_dtype::bf16 && d.b == npu_dtype::bf16 && d.c == npu_dtype::f32) ||
                    (d.a == npu_dtype::i8 && d.b == npu_dtype::i8 && d.c == npu_dtype::i32) ||
                    (d.a == npu_dtype::bf16 && d.b == npu_dtype::i8 && d.c == npu_dtype::f32);
    if (!ok) {
        ck.fail(dw + ".c", std::string("unsupported combination ") + npu_dtype_name(d.a) + " x " +
                               npu_dtype_name(d.b) + " -> " + npu_dtype_name(d.c) +
                               " (supported: bf16 x bf16 -> f32, i8 x i8 -> i32, bf16 x i8 -> f32)");
    }
    if (ck.string_field(jd, dw, "b_layout") != "nk") {
        ck.fail(dw + ".b_layout", "must be \"nk\" (weights stored rows x k, row-major)");
    }
}

// A design's core tile: the blocks' shapes must be whole tiles of the array (4 rows of m, `columns` of n).
static void npu_manifest_tile(const checker& ck, const json& jd, const std::string& dw, npu_design& d) {
    const json& jt = ck.member(jd, dw, "tile");
    if (!jt.is_object()) ck.fail(dw + ".tile", "must be an object {\"m\", \"k\", \"n\", \"columns\"}, got " + jt.dump());
    const std::string tw = dw + ".tile";
    d.tile.m = ck.int_field(jt, tw, "m", 8);
    d.tile.k = ck.int_field(jt, tw, "k", 8);
    d.tile.n = ck.int_field(jt, tw, "n", 8);
    d.tile.columns = ck.int_field(jt, tw, "columns", 1);
    if (d.tile.columns > 4) ck.fail(tw + ".columns", "npu1 has 4 usable columns, got " + std::to_string(d.tile.columns));
    if (d.k % d.tile.k) {
        ck.fail(tw + ".k", "the design's k " + std::to_string(d.k) + " is not a multiple of it (" +
                               std::to_string(d.tile.k) + ")");
    }
}

// A design's blocks (its instruction streams), appended to `kernels` with unique names and shapes.
static void npu_manifest_blocks(const checker& ck, const json& jd, const std::string& dw, npu_design& d,
                                std::set<std::string>& kernel_names, std::vector<npu_kernel>& kernels) {
    const json& blocks = ck.member(jd, dw, "blocks");
    if (!blocks.is_array() || blocks.empty()) ck.fail(dw + ".blocks", "must be a non-empty array");
    std::set<std::pair<int, int>> shapes;
    for (size_t bi = 0; bi < blocks.size(); ++bi) {
        const json& jb = blocks[bi];
        const std::string bw = dw + ".blocks[" + std::to_string(bi) + "]";
        if (!jb.is_object()) ck.fail(bw, "must be an object");
        npu_kernel k;
        k.index = static_cast<int>(kernels.size());
        k.design = d.index;
        k.name = ck.string_field(jb, bw, "name");
        if (!kernel_names.insert(k.name).second) ck.fail(bw + ".name", "duplicate kernel name '" + k.name + "'");
        k.tokens = ck.int_field(jb, bw, "tokens", 4 * d.tile.m, "4 rows x tile m");
        k.rows = ck.int_field(jb, bw, "rows", d.tile.columns * d.tile.n, "columns x tile n");
        k.k = d.k;
        k.a = d.a;
        k.b = d.b;
        k.c = d.c;
        if (!shapes.insert({k.tokens, k.rows}).second) {
            ck.fail(bw, "a second block of " + std::to_string(k.tokens) + " tokens x " + std::to_string(k.rows) +
                            " rows in the same design");
        }
        k.instr_path = ck.file_field(jb, bw, "instr");
        d.kernels.push_back(k.index);
        kernels.push_back(std::move(k));
    }
}

npu_manifest npu_manifest::load(const std::string& path) {
    checker ck{path, ""};
    const std::string dir = os::dir_name(path);   // "." for a bare file name: then names stay as they are
    if (dir != "." || path.rfind("./", 0) == 0) {
        ck.dir = dir;
    }
    json doc = npu_manifest_document(path, ck);
    npu_manifest m;
    m.m_path = path;
    if (doc.contains("emulator")) {
        if (!doc["emulator"].is_boolean()) ck.fail("emulator", "must be true or false");
        m.m_emulator = doc["emulator"].get<bool>();
    }
    const json& designs = ck.member(doc, "", "designs");
    if (!designs.is_array() || designs.empty()) {
        ck.fail("designs", "must be a non-empty array");
    }
    std::set<std::string> design_names, kernel_names;
    for (size_t di = 0; di < designs.size(); ++di) {
        const json& jd = designs[di];
        const std::string dw = "designs[" + std::to_string(di) + "]";
        if (!jd.is_object()) ck.fail(dw, "must be an object");
        npu_design d;
        d.index = static_cast<int>(di);
        d.name = ck.string_field(jd, dw, "name");
        if (!design_names.insert(d.name).second) ck.fail(dw + ".name", "duplicate design name '" + d.name + "'");
        d.xclbin_path = ck.file_field(jd, dw, "xclbin");
        d.kernel_name = ck.string_field(jd, dw, "kernel");
        npu_manifest_types(ck, jd, dw, d);
        d.k = ck.int_field(jd, dw, "k", 8);
        npu_manifest_tile(ck, jd, dw, d);
        npu_manifest_blocks(ck, jd, dw, d, kernel_names, m.m_kernels);
        m.m_designs.push_back(std::move(d));
    }
    return m;
}

const npu_kernel* npu_manifest::find(npu_dtype a, npu_dtype b, int tokens, int k, int rows) const {
    for (const npu_kernel& kn : m_kernels) {
        if (kn.a == a && kn.b == b && kn.tokens == tokens && kn.k == k && kn.rows == rows) return &kn;
    }
    return nullptr;
}

const npu_kernel* npu_manifest::find(const std::string& name) const {
    for (const npu_kernel& kn : m_kernels) {
        if (kn.name == name) return &kn;
    }
    return nullptr;
}

std::vector<const npu_kernel*> npu_manifest::kernels_for(npu_dtype a, npu_dtype b) const {
    std::vector<const npu_kernel*> out;
    for (const npu_kernel& kn : m_kernels) {
        if (kn.a == a && kn.b == b) out.push_back(&kn);
    }
    std::sort(out.begin(), out.end(), [](const npu_kernel* x, const npu_kernel* y) {
        return x->tokens != y->tokens ? x->tokens < y->tokens : x->rows < y->rows;
    });
    return out;
}

} // namespace xdna
