#include "workers/gpu/weight_cache.h"

#include "util/clock.h"
#include "util/log.h"

#include "ggml-alloc.h"

#include <cstring>

namespace xdna::gpu {

bool weight_cache::key_t::operator==(const key_t & o) const {
    return data == o.data && bytes == o.bytes && type == o.type && ne[0] == o.ne[0] && ne[1] == o.ne[1] &&
           ne[2] == o.ne[2] && ne[3] == o.ne[3];
}

size_t weight_cache::key_hash::operator()(const key_t & k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix((uint64_t) (uintptr_t) k.data); mix(k.bytes); mix((uint64_t) k.type);
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

weight_cache::key_t weight_cache::key_of(const ggml_tensor * w) {
    key_t k;
    k.data  = w->data;
    k.bytes = ggml_nbytes(w);
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

void weight_cache::evict_lru() {
    entry & e = lru.back();
    entries.erase(e.key);
    used_bytes -= e.bytes;
    release(e);
    lru.pop_back();
}

weight_cache::lookup weight_cache::get(const ggml_tensor * w) {
    lookup res;
    const key_t key = key_of(w);
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

    const size_t need = device_size(w);
    if (need > budget_bytes) return res;
    while (!lru.empty() && used_bytes + need > budget_bytes) evict_lru();

    const double t0 = now_seconds();
    entry e = { key, fp, 0, nullptr, nullptr, nullptr };
    ggml_init_params params = { ggml_tensor_overhead(), nullptr, true };
    e.ctx = ggml_init(params);
    e.tensor = ggml_new_tensor(e.ctx, w->type, GGML_MAX_DIMS, w->ne);
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
    ggml_backend_tensor_set(e.tensor, w->data, 0, ggml_nbytes(w));
    e.bytes = ggml_backend_buffer_get_size(e.buf);
    used_bytes += e.bytes;
    n_uploads++;

    lru.push_front(e);
    entries[key] = lru.begin();
    res.tensor = e.tensor;
    res.uploaded = true;
    res.again = !seen.insert(key).second;
    res.upload_seconds = now_seconds() - t0;
    return res;
}

}  // namespace xdna::gpu
