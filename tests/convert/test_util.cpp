#include "test_util.h"

#include <dlfcn.h>

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

namespace xdna_test {

ggml_backend_dev_t cpu_device() {
    static ggml_backend_dev_t dev = [] {
        // the CPU backend logs every tensor it repacks; keep warnings and errors only
        ggml_log_set([](ggml_log_level level, const char * text, void *) {
            if (level >= GGML_LOG_LEVEL_WARN) {
                fputs(text, stderr);
            }
        }, nullptr);
        if (ggml_backend_dev_t d = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) {
            return d;
        }
        // The CPU backend is a module next to libggml.so: find that directory through a libggml symbol.
        Dl_info info{};
        if (dladdr((void *) &ggml_backend_load_all_from_path, &info) != 0 && info.dli_fname != nullptr) {
            std::string dir = info.dli_fname;
            dir             = dir.substr(0, dir.find_last_of('/'));
            if (ggml_backend_load((dir + "/libggml-cpu.so").c_str()) == nullptr) {
                ggml_backend_load_all_from_path(dir.c_str());
            }
        }
        return ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    }();
    return dev;
}

std::vector<ggml_type> convertible_types() {
    std::vector<ggml_type> out;
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
        const ggml_type          t  = (ggml_type) i;
        const ggml_type_traits * tr = ggml_get_type_traits(t);
        if (tr->blck_size == 0) {
            continue;  // a removed type
        }
        if (t == GGML_TYPE_F32 || tr->to_float != nullptr) {
            out.push_back(t);
        }
    }
    return out;
}

std::vector<ggml_type> repack_types() {
    return { GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_Q2_K, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4 };
}

std::string type_label(ggml_type t) {
    return ggml_type_name(t);
}

std::vector<float> random_floats(size_t n, uint64_t seed, float scale) {
    std::mt19937_64                 rng(seed);
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float>              v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = nd(rng);
        if (rng() % 97 == 0) {
            v[i] *= 8.0f;  // outliers, as real weights have
        }
    }
    return v;
}

const std::vector<uint8_t> & quantized_rows(ggml_type type, int64_t K, int64_t rows, uint64_t seed) {
    static std::mutex mutex;
    static std::map<std::tuple<int, int64_t, int64_t, uint64_t>, std::vector<uint8_t>> cache;
    std::lock_guard<std::mutex> lock(mutex);
    auto key = std::make_tuple((int) type, K, rows, seed);
    auto it  = cache.find(key);
    if (it != cache.end()) {
        return it->second;
    }
    const std::vector<float> src = random_floats((size_t) (K * rows), seed ^ (uint64_t) type * 7919u ^ (uint64_t) K);
    std::vector<uint8_t>     out(ggml_row_size(type, K) * rows);
    const bool grid_type = type == GGML_TYPE_IQ1_S || type == GGML_TYPE_IQ1_M || type == GGML_TYPE_IQ2_XXS ||
                           type == GGML_TYPE_IQ2_XS || type == GGML_TYPE_IQ2_S || type == GGML_TYPE_IQ3_XXS ||
                           type == GGML_TYPE_IQ3_S;
    if (grid_type) {
        out = random_blocks(type, K, rows, seed);
    } else if (type == GGML_TYPE_F32) {
        std::memcpy(out.data(), src.data(), out.size());
    } else {
        std::vector<float> imatrix(K, 1.0f);
        ggml_quantize_chunk(type, src.data(), out.data(), 0, rows, K,
                            ggml_quantize_requires_imatrix(type) ? imatrix.data() : nullptr);
    }
    return cache.emplace(key, std::move(out)).first->second;
}

std::vector<uint8_t> random_blocks(ggml_type type, int64_t K, int64_t rows, uint64_t seed) {
    const size_t         bs = ggml_type_size(type);
    const int64_t        be = ggml_blck_size(type);
    const size_t         n_blocks = (size_t) (K / be * rows);
    std::vector<uint8_t> out(bs * n_blocks);
    std::vector<float>   tmp(be);
    std::mt19937_64      rng(seed * 0x9E3779B97F4A7C15ull + (uint64_t) type);
    const ggml_to_float_t to_float = ggml_get_type_traits(type)->to_float;
    for (size_t b = 0; b < n_blocks; ++b) {
        uint8_t * blk = out.data() + b * bs;
        for (int attempt = 0;; ++attempt) {
            for (size_t i = 0; i < bs; ++i) {
                blk[i] = (uint8_t) rng();
            }
            if (to_float == nullptr) {
                break;
            }
            to_float(blk, tmp.data(), be);
            bool finite = true;
            for (float v : tmp) {
                finite = finite && std::isfinite(v);
            }
            if (finite || attempt > 1000) {
                break;
            }
        }
    }
    return out;
}

std::vector<float> reference_f32(ggml_type type, const uint8_t * rows, int64_t K, int64_t n_rows) {
    std::vector<float> f(K * n_rows);
    if (type == GGML_TYPE_F32) {
        std::memcpy(f.data(), rows, f.size() * sizeof(float));
    } else {
        ggml_get_type_traits(type)->to_float(rows, f.data(), K * n_rows);
    }
    return f;
}

std::vector<ggml_bf16_t> reference_bf16(ggml_type type, const uint8_t * rows, int64_t K, int64_t n_rows) {
    const std::vector<float> f = reference_f32(type, rows, K, n_rows);
    std::vector<ggml_bf16_t> b(f.size());
    ggml_fp32_to_bf16_row_ref(f.data(), b.data(), (int64_t) f.size());
    return b;
}

weight::~weight() {
    if (buf != nullptr) {
        ggml_backend_buffer_free(buf);
    }
    if (ctx != nullptr) {
        ggml_free(ctx);
    }
}

void make_plain(weight & w, ggml_type type, int64_t K, int64_t N, int64_t E, const std::vector<uint8_t> & plain) {
    const size_t     nbytes = ggml_row_size(type, K) * N * E;
    ggml_init_params p      = { 4 * ggml_tensor_overhead() + nbytes + 256, nullptr, false };
    w.ctx                   = ggml_init(p);
    w.t                     = E > 1 ? ggml_new_tensor_3d(w.ctx, type, K, N, E) : ggml_new_tensor_2d(w.ctx, type, K, N);
    ggml_set_name(w.t, "plain_weight");
    w.plain.assign(plain.begin(), plain.begin() + nbytes);
    std::memcpy(w.t->data, w.plain.data(), nbytes);
}

bool make_repacked(weight & w, ggml_type type, int64_t K, int64_t N, int64_t E, const std::vector<uint8_t> & plain,
                   std::string * why) {
    const xdna_repack_probe_result & probe = xdna_repack_probe();
    if (probe.buft == nullptr) {
        *why = "no CPU_REPACK buffer type: " + probe.note;
        return false;
    }
    const size_t     nbytes = ggml_row_size(type, K) * N * E;
    ggml_init_params p      = { ggml_tensor_overhead(), nullptr, true };
    w.ctx                   = ggml_init(p);
    w.t                     = E > 1 ? ggml_new_tensor_3d(w.ctx, type, K, N, E) : ggml_new_tensor_2d(w.ctx, type, K, N);
    ggml_set_name(w.t, "repacked_weight");
    w.buf = ggml_backend_alloc_ctx_tensors_from_buft(w.ctx, probe.buft);
    if (w.buf == nullptr) {
        *why = "cannot allocate in CPU_REPACK";
        return false;
    }
    if (w.t->extra == nullptr) {
        *why = std::string("this CPU backend does not repack ") + ggml_type_name(type) + " at this shape";
        return false;
    }
    w.plain.assign(plain.begin(), plain.begin() + nbytes);
    ggml_backend_tensor_set(w.t, w.plain.data(), 0, nbytes);
    return true;
}

std::vector<xdna_convert_isa> available_isas() {
    std::vector<xdna_convert_isa> v;
    for (int i = XDNA_CONVERT_GENERIC; i <= (int) xdna_convert_isa_best(); ++i) {
        v.push_back((xdna_convert_isa) i);
    }
    return v;
}

}  // namespace xdna_test
