// xdna-perturb-gguf: copies a GGUF model and changes one weight, so that the accuracy harness can be shown a
// configuration that is wrong on purpose (its tests check that such a change is reported, not hidden).
//   xdna-perturb-gguf IN OUT TENSOR [INDEX [DELTA]]     adds DELTA (default 1.0) to element INDEX (default 0)
// The tensor must be F32, F16 or BF16.
#include "ggml.h"
#include "gguf.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct gguf_deleter { void operator()(gguf_context * c) const { gguf_free(c); } };
struct file_closer  { void operator()(FILE * f) const { if (f) fclose(f); } };

void copy_file(const std::string & in, const std::string & out) {
    std::unique_ptr<FILE, file_closer> a(fopen(in.c_str(), "rb")), b(fopen(out.c_str(), "wb"));
    if (!a || !b) {
        throw std::runtime_error((a ? out : in) + ": cannot open: " + strerror(errno));
    }
    std::vector<char> buf(1 << 20);
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), a.get())) > 0;) {
        if (fwrite(buf.data(), 1, n, b.get()) != n) {
            throw std::runtime_error(out + ": write failed");
        }
    }
}

int run(int argc, char ** argv) {
    if (argc < 4 || argc > 6) {
        fprintf(stderr, "usage: xdna-perturb-gguf IN OUT TENSOR [INDEX [DELTA]]\n");
        return 2;
    }
    const std::string in = argv[1], out = argv[2], name = argv[3];
    long long index = 0;
    float delta = 1.0f;
    char * end = nullptr;
    if (argc > 4 && ((index = strtoll(argv[4], &end, 10)), end == argv[4] || *end)) {
        throw std::runtime_error(std::string("INDEX '") + argv[4] + "' is not an integer");
    }
    if (argc > 5 && ((delta = strtof(argv[5], &end)), end == argv[5] || *end || !std::isfinite(delta))) {
        throw std::runtime_error(std::string("DELTA '") + argv[5] + "' is not a number");
    }

    gguf_init_params p = { /*no_alloc =*/ true, /*ctx =*/ nullptr };
    std::unique_ptr<gguf_context, gguf_deleter> g(gguf_init_from_file(in.c_str(), p));
    if (!g) {
        throw std::runtime_error(in + ": not a readable GGUF file");
    }
    const int64_t id = gguf_find_tensor(g.get(), name.c_str());
    if (id < 0) {
        throw std::runtime_error(in + ": no tensor named '" + name + "'");
    }
    const ggml_type type = gguf_get_tensor_type(g.get(), id);
    const size_t esize = type == GGML_TYPE_F32 ? 4 : (type == GGML_TYPE_F16 || type == GGML_TYPE_BF16) ? 2 : 0;
    if (esize == 0) {
        throw std::runtime_error(name + " is " + ggml_type_name(type) + ": only F32, F16 and BF16 tensors can be perturbed");
    }
    const int64_t * ne = gguf_get_tensor_ne(g.get(), id);
    const long long n = ne[0] * ne[1] * ne[2] * ne[3];
    if (index < 0 || index >= n) {
        throw std::runtime_error("index " + std::to_string(index) + " is outside " + name + " (" + std::to_string(n) + " elements)");
    }
    const size_t off = gguf_get_data_offset(g.get()) + gguf_get_tensor_offset(g.get(), id) + size_t(index) * esize;

    copy_file(in, out);
    std::unique_ptr<FILE, file_closer> f(fopen(out.c_str(), "r+b"));
    unsigned char raw[4] = {0};
    if (!f || fseek(f.get(), (long) off, SEEK_SET) != 0 || fread(raw, 1, esize, f.get()) != esize) {
        throw std::runtime_error(out + ": cannot read the element back");
    }
    float v;
    if (type == GGML_TYPE_F32) {
        memcpy(&v, raw, 4);
        v += delta;
        memcpy(raw, &v, 4);
    } else if (type == GGML_TYPE_F16) {
        ggml_fp16_t h;
        memcpy(&h, raw, 2);
        v = ggml_fp16_to_fp32(h) + delta;
        h = ggml_fp32_to_fp16(v);
        memcpy(raw, &h, 2);
    } else {
        ggml_bf16_t h;
        memcpy(&h, raw, 2);
        v = ggml_bf16_to_fp32(h) + delta;
        h = ggml_fp32_to_bf16(v);
        memcpy(raw, &h, 2);
    }
    if (fseek(f.get(), (long) off, SEEK_SET) != 0 || fwrite(raw, 1, esize, f.get()) != esize) {
        throw std::runtime_error(out + ": cannot write the element");
    }
    printf("%s[%lld] is now %g\n", name.c_str(), index, v);
    return 0;
}

} // namespace

int main(int argc, char ** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception & e) {
        fprintf(stderr, "xdna-perturb-gguf: %s\n", e.what());
        return 1;
    }
}
