// Finds out at run time which types the loaded CPU backend repacks, and checks this library's inverse on each.
//
// Which types are repacked depends on how libggml-cpu was compiled (x86: Q4_0, Q4_K, IQ4_NL and MXFP4 with AVX2, Q2_K
// only with AVX-512), so nothing can be assumed at build time. A probe tensor of each type is allocated in the CPU's
// CPU_REPACK buffer type, filled with random bytes (the repack, done in set_tensor, is a pure byte permutation) and
// converted back; only a type whose inverse gives back the very same bytes is convertible.

#include "repack_layout.h"
#include "xdna_convert.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

namespace {

constexpr ggml_type k_repack_types[XDNA_REPACK_COUNT] = {
    GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_Q2_K, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4,
};

ggml_backend_buffer_type_t find_repack_buft(ggml_backend_dev_t dev) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    if (reg == nullptr) {
        return nullptr;
    }
    auto get_extra = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(
        reg, "ggml_backend_dev_get_extra_bufts");
    if (get_extra == nullptr) {
        return nullptr;
    }
    for (ggml_backend_buffer_type_t * p = get_extra(dev); p != nullptr && *p != nullptr; ++p) {
        if (std::strcmp(ggml_backend_buft_name(*p), "CPU_REPACK") == 0) {
            return *p;
        }
    }
    return nullptr;
}

// Repacks a 16 x 512 probe tensor of the type and checks the inverse.
void probe_type(ggml_backend_buffer_type_t buft, xdna_repack_type_info & info) {
    const ggml_type type  = info.type;
    const char *    tname = ggml_type_name(type);
    if (ggml_type_size(type) != xdna::repack_plain_block_size(type) ||
        ggml_blck_size(type) != xdna::repack_block_elems(type)) {
        info.note = std::string(tname) + ": ggml's block differs from the one this library was written for";
        return;
    }

    constexpr int64_t K = 512, N = 16;
    ggml_init_params  params = { 2 * ggml_tensor_overhead(), nullptr, true };
    ggml_context *    ctx    = ggml_init(params);
    if (ctx == nullptr) {
        info.note = std::string(tname) + ": ggml_init failed";
        return;
    }
    ggml_tensor *         t   = ggml_new_tensor_2d(ctx, type, K, N);
    ggml_set_name(t, "xdna_repack_probe");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    if (buf == nullptr) {
        info.note = std::string(tname) + ": cannot allocate a probe tensor in CPU_REPACK";
        ggml_free(ctx);
        return;
    }
    if (t->extra == nullptr) {
        info.note = std::string("this CPU backend does not repack ") + tname;
    } else {
        info.repacked = true;
        info.extra    = t->extra;

        const size_t         nbytes = ggml_nbytes(t);
        std::vector<uint8_t> orig(nbytes), back(nbytes);
        uint64_t             s = 0x9E3779B97F4A7C15ull ^ (uint64_t) type;
        for (size_t i = 0; i < nbytes; ++i) {  // splitmix64: any bytes will do, the repack is a permutation
            s += 0x9E3779B97F4A7C15ull;
            uint64_t z = s;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            orig[i] = (uint8_t) (z ^ (z >> 31));
        }
        ggml_backend_tensor_set(t, orig.data(), 0, nbytes);

        const int64_t nblocks = K / ggml_blck_size(type);
        for (int64_t g = 0; g < N / xdna::REPACK_ROWS; ++g) {
            const size_t off = (size_t) g * xdna::REPACK_ROWS * t->nb[1];
            xdna_unrepack_group(type, (const char *) t->data + off, nblocks, back.data() + off);
        }
        if (std::memcmp(orig.data(), back.data(), nbytes) == 0) {
            info.verified = true;
        } else {
            info.note = std::string(tname) + ": the CPU's repacked layout is not the one this library inverts";
        }
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

xdna_repack_probe_result run_probe() {
    xdna_repack_probe_result r;
    for (int k = 0; k < XDNA_REPACK_COUNT; ++k) {
        r.types[k].type = k_repack_types[k];
        r.types[k].note = "no CPU_REPACK buffer type";
    }
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (dev == nullptr) {
        r.note = "no CPU device is registered (load the CPU backend first)";
        return r;
    }
    r.cpu_found = true;
    r.buft      = find_repack_buft(dev);
    if (r.buft == nullptr) {
        r.note = "the CPU backend has no CPU_REPACK buffer type";
        return r;
    }
    for (auto & info : r.types) {
        info.note.clear();
        probe_type(r.buft, info);
    }
    return r;
}

}  // namespace

const xdna_repack_probe_result & xdna_repack_probe() {
    static std::mutex               mutex;
    static std::atomic<bool>        done{ false };
    static xdna_repack_probe_result kept;
    static xdna_repack_probe_result no_cpu;  // returned while no CPU device is registered; never changes afterwards

    if (done.load(std::memory_order_acquire)) {
        return kept;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (done.load(std::memory_order_relaxed)) {
        return kept;
    }
    xdna_repack_probe_result r = run_probe();
    if (!r.cpu_found) {
        if (no_cpu.note.empty()) {
            no_cpu = r;
        }
        return no_cpu;
    }
    kept = std::move(r);
    done.store(true, std::memory_order_release);
    return kept;
}

const xdna_repack_type_info * xdna_repack_info(ggml_type type) {
    for (int k = 0; k < XDNA_REPACK_COUNT; ++k) {
        if (k_repack_types[k] == type) {
            return &xdna_repack_probe().types[k];
        }
    }
    return nullptr;
}

bool xdna_tensor_in_repack_buffer(const ggml_tensor * t) {
    if (t == nullptr) {
        return false;
    }
    const ggml_tensor * base = t->view_src ? t->view_src : t;
    if (base->buffer == nullptr) {
        return false;
    }
    ggml_backend_buffer_type_t buft = ggml_backend_buffer_get_type(base->buffer);
    const auto &               p    = xdna_repack_probe();
    if (p.buft != nullptr) {
        return buft == p.buft;
    }
    return buft != nullptr && std::strcmp(ggml_backend_buft_name(buft), "CPU_REPACK") == 0;
}
