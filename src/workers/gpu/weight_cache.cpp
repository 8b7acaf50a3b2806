#include "workers/gpu/weight_cache.h"

#include "convert/xdna_convert.h"
#include "util/clock.h"
#include "util/log.h"

#include "ggml-alloc.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace xdna::gpu {

bool weight_cache::key_t::operator==(const key_t & o) const {
    return data == o.data && bytes == o.bytes && type == o.type && repacked == o.repacked && r0 == o.r0 && r1 == o.r1 && ne[0] == o.ne[0] && ne[1] == o.ne[1] &&
           ne[2] == o.ne[2] && ne[3] == o.ne[3];
}

size_t weight_cache::key_hash::operator()(const key_t & k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix((uint64_t) (uintptr_t) k.data); mix(k.bytes); mix((uint64_t) k.type); mix((uint64_t) k.repacked); mix((uint64_t) k.r0); mix((uint64_t) k.r1);
    for (int64_t n : k.ne) mix((uint64_t) n);
    return (size_t) h;
}

weight_cache::weight_cache(ggml_backend_buffer_type_t buft, size_t budget_bytes) : buft(buft), budget_bytes(budget_bytes) {}

weight_cache::~weight_cache() {
    clear();
}

void weight_cache::clear() {
    for (entry & e : lru) release(e);
    lru.clear();
    entries.clear();
    used_bytes = 0;
}

weight_cache::key_t weight_cache::key_of(const ggml_tensor * w, int64_t r0, int64_t r1) {
    key_t k;
    k.data  = w->data;
    k.bytes = ggml_nbytes(w);
    k.repacked = xdna_tensor_in_repack_buffer(w);
    k.r0 = r1 > 0 ? r0 : 0;
    k.r1 = r1 > 0 ? r1 : 0;
    k.type  = w->type;
    for (int i = 0; i < 4; ++i) k.ne[i] = w->ne[i];
    return k;
}

uint64_t weight_cache::fingerprint_of(const ggml_tensor * w) {
    // 64 samples of 16 bytes spread over the whole tensor: a few cache lines, so a lookup stays in microseconds
    const uint8_t * p = (const uint8_t *) w->data;
    const size_t n = ggml_nbytes(w);
    const size_t chunk = 16, samples = 64;
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](const uint8_t * b, size_t len) {
        for (size_t i = 0; i < len; ++i) h = (h ^ b[i]) * 1099511628211ull;
    };
    if (n <= chunk * samples) {
        mix(p, n);
        return h;
    }
    const size_t stride = (n - chunk) / (samples - 1);
    for (size_t i = 0; i < samples; ++i) mix(p + i * stride, chunk);
    return h;
}

size_t weight_cache::device_size(const ggml_tensor * w) const {
    // some devices pad quantized rows (CUDA does); the buffer also rounds up to the alignment
    const size_t align = ggml_backend_buft_get_alignment(buft);
    const size_t sz = ggml_backend_buft_get_alloc_size(buft, const_cast<ggml_tensor *>(w));
    return (sz + align - 1) / align * align;
}

bool weight_cache::fits(const ggml_tensor * w) const {
    return device_size(w) <= budget_bytes;
}

void weight_cache::release(entry & e) {
    if (e.buf) ggml_backend_buffer_free(e.buf);
    if (e.ctx) ggml_free(e.ctx);
    e.buf = nullptr;
    e.ctx = nullptr;
}

// The device copy's bytes: the weight's own, or for a weight in the CPU's repacked layout its plain ggml blocks (the
// exact inverse of the repack, as the NPU worker converts them), a few MiB at a time so that no second copy of a large
// weight is held on the host. The device copy is always plain, contiguous, expert after expert.
bool weight_cache::copy_in(ggml_tensor * dst, const ggml_tensor * w, bool repacked, int64_t r0, int64_t r1) {
    if (!repacked && r1 == 0) {
        ggml_backend_tensor_set(dst, w->data, 0, ggml_nbytes(w));
        return true;
    }
    if (r1 == 0) r1 = w->ne[1];
    const int64_t n   = r1 - r0;
    const size_t  row = ggml_row_size(w->type, w->ne[0]);
    const int64_t chunk_rows = std::max<int64_t>(XDNA_REPACK_ROWS, (int64_t) ((size_t(4) << 20) / row) / XDNA_REPACK_ROWS * XDNA_REPACK_ROWS);
    std::vector<uint8_t> plain(repacked ? (size_t) std::min<int64_t>(chunk_rows, n) * row : 0);
    for (int64_t e = 0; e < w->ne[2]; ++e) {
        for (int64_t a = r0; a < r1; a += chunk_rows) {
            const int64_t b = std::min(r1, a + chunk_rows);
            const size_t  at = ((size_t) e * n + (a - r0)) * row;
            if (!repacked) {   // plain rows are contiguous within an expert (the worker takes contiguous weights only)
                ggml_backend_tensor_set(dst, (const char *) w->data + e * w->nb[2] + a * w->nb[1], at, (size_t) (b - a) * row);
                continue;
            }
            std::string why;
            if (!xdna_weight_plain_rows(w, e, a, b, plain.data(), row, &why)) {
                XDNA_LOG_ERROR("GPU worker: %s", why.c_str());
                return false;
            }
            ggml_backend_tensor_set(dst, plain.data(), at, (size_t) (b - a) * row);
        }
    }
    return true;
}

void weight_cache::evict_lru() {
    entry & e = lru.back();
    entries.erase(e.key);
    used_bytes -= e.bytes;
    release(e);
    lru.pop_back();
}

weight_cache::lookup weight_cache::get(const ggml_tensor * w, int64_t r0, int64_t r1) {
    lookup res;
    if (r1 > 0 && r0 == 0 && r1 == w->ne[1]) r1 = 0;   // every row: the whole copy
    const key_t key = key_of(w, r0, r1);
    const uint64_t fp = fingerprint_of(w);

    auto it = entries.find(key);
    if (it != entries.end()) {
        if (it->second->fingerprint == fp) {
            lru.splice(lru.begin(), lru, it->second);   // most recently used
            res.tensor = it->second->tensor;
            return res;
        }
        // same place and shape, other bytes: another tensor now lives there
        used_bytes -= it->second->bytes;
        release(*it->second);
        lru.erase(it->second);
        entries.erase(it);
    }

    int64_t ne[GGML_MAX_DIMS] = { w->ne[0], w->ne[1], w->ne[2], w->ne[3] };
    if (key.r1 > 0) ne[1] = key.r1 - key.r0;
    const size_t need = key.r1 > 0 ? device_size(w) / w->ne[1] * ne[1] + ggml_backend_buft_get_alignment(buft) : device_size(w);
    if (need > budget_bytes) return res;
    while (!lru.empty() && used_bytes + need > budget_bytes) evict_lru();

    const double t0 = now_seconds();
    entry e = { key, fp, 0, nullptr, nullptr, nullptr };
    ggml_init_params params = { ggml_tensor_overhead(), nullptr, true };
    e.ctx = ggml_init(params);
    e.tensor = ggml_new_tensor(e.ctx, w->type, GGML_MAX_DIMS, ne);
    for (;;) {
        // the device may be short of memory (llama.cpp's own buffers live there too): make room, or give up
        e.buf = ggml_backend_alloc_ctx_tensors_from_buft(e.ctx, buft);
        if (e.buf || lru.empty()) break;
        evict_lru();
    }
    if (!e.buf) {
        ggml_free(e.ctx);
        return res;
    }
    ggml_backend_buffer_set_usage(e.buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    if (!copy_in(e.tensor, w, key.repacked, key.r0, key.r1)) {
        release(e);
        return res;
    }
    e.bytes = ggml_backend_buffer_get_size(e.buf);
    used_bytes += e.bytes;
    n_uploads++;

    lru.push_front(e);
    entries[key] = lru.begin();
    res.tensor = e.tensor;
    res.uploaded = true;
    // a copy of some rows counts as the weight's first only if no copy of it was made before: a boundary that moves
    // costs a copy every time, which the planner must see
    key_t whole = key;
    whole.r0 = whole.r1 = 0;
    res.again = !seen.insert(whole).second;
    res.upload_seconds = now_seconds() - t0;
    return res;
}

}  // namespace xdna::gpu
