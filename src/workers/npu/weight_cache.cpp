#include "workers/npu/weight_cache.h"

#include "convert/xdna_convert.h"
#include "workers/npu/resident_weight.h"
#include "os/os.h"
#include "util/log.h"

#include "ggml-backend.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace xdna::npu {

namespace {

// `out`'s shape: `rows` rows of `w` in `fmt`, row stride ld, and for int8 its scales (zero); no elements yet
void shape_weight(const ggml_tensor * w, int64_t rows, weight_format fmt, int64_t ld, converted_weight & out) {
    out.format = fmt;
    out.rows   = rows;
    out.k      = w->ne[0];
    out.ld     = ld;
    if (fmt == weight_format::int8) {
        out.groups = xdna_w8_groups(ld);
        out.scales.assign(size_t(rows) * out.groups, 0.0f);
    }
}

// `out`'s elements in its own row-major vectors
void size_elements(converted_weight & out) {
    if (out.format == weight_format::bf16) out.bf16.resize(size_t(out.rows) * out.ld);
    else out.i8.resize(size_t(out.rows) * out.ld);
}

size_t elem_bytes(const converted_weight & cw) { return cw.format == weight_format::bf16 ? 2 : 1; }

// the first element of `out`'s own vectors
uint8_t * elements_of(converted_weight & out) {
    return out.format == weight_format::bf16 ? (uint8_t *) out.bf16.data() : (uint8_t *) out.i8.data();
}

// rows [r0, r1) of `w` into `dst` (row r0 first, stride out.ld) and, for int8, their scales into `out`'s from its
// row `at` on
bool convert_rows_to(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, converted_weight & out,
                     uint8_t * dst, int64_t at, std::string * err) {
    if (out.format == weight_format::bf16) {
        return xdna_weight_to_bf16(w, expert, r0, r1, (ggml_bf16_t *) dst, out.ld, err);
    }
    return xdna_weight_to_int8(w, expert, r0, r1, (int8_t *) dst, out.ld, out.scales.data() + at * out.groups,
                               out.groups, err);
}

// Rows [r0, r1) of the weight into their place: its own vectors, or its NPU buffer (straight where that is laid out
// row-major, else a few rows at a time through `scratch` into its K panels), synced there: on the CPU's threads with
// the conversion, where one thread used to move a row-major copy into the buffer afterwards (2-CPU VM, two threads,
// emulated NPU: that move took 7 ms of a 4-layer model's ~8 ms per weight; converting and storing now 0.3-1 ms, and
// the buffer's allocation, the emulated driver zeroing its pages, the rest).
bool convert_slice(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, converted_weight & out,
                   std::vector<uint8_t> & scratch, std::string * err) {
    const size_t row_bytes = size_t(out.ld) * elem_bytes(out);
    if (!out.resident) {
        return convert_rows_to(w, expert, r0, r1, out, elements_of(out) + size_t(r0) * row_bytes, r0, err);
    }
    resident_weight & rw = *out.resident;
    if (uint8_t * dst = rw.rows_in_place(r0)) {
        return convert_rows_to(w, expert, r0, r1, out, dst, r0, err) && rw.store_rows(r0, r1 - r0, dst, out.ld, err);
    }
    constexpr int64_t chunk = 32;   // whole 8-row groups, a few hundred KiB that stay in the cache
    scratch.resize(size_t(chunk) * row_bytes);
    for (int64_t r = r0; r < r1; r += chunk) {
        const int64_t n = std::min(chunk, r1 - r);
        if (!convert_rows_to(w, expert, r, r + n, out, scratch.data(), r, err) ||
            !rw.store_rows(r, n, scratch.data(), out.ld, err)) {
            return false;
        }
    }
    return true;
}

// the whole weight, in slices of whole 8-row groups on the runner's threads; false with `err` if a slice failed or
// the runner did not run (then nothing is known of `out`)
bool convert_in_parallel(const ggml_tensor * w, int64_t expert, converted_weight & out, const cpu_parallel & par,
                         std::string * err) {
    std::mutex mu;
    bool ok = true;
    const bool ran = par([&](int ith, int nth) {
        const int64_t groups = (out.rows + 7) / 8, per = (groups + nth - 1) / nth;
        const int64_t r0 = std::min(out.rows, ith * per * 8), r1 = std::min(out.rows, (ith + 1) * per * 8);
        if (r0 >= r1) return;
        std::string why;
        std::vector<uint8_t> scratch;
        if (convert_slice(w, expert, r0, r1, out, scratch, &why)) return;
        std::lock_guard<std::mutex> lock(mu);
        if (ok && err) *err = why;
        ok = false;
    });
    if (!ran && err) *err = "the CPU worker's threads could not run the conversion";
    return ran && ok;
}

}  // namespace

bool convert_weight_rows(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, weight_format fmt,
                         int64_t ld, converted_weight & out, std::string * err) {
    shape_weight(w, r1 - r0, fmt, ld, out);
    size_elements(out);
    return convert_rows_to(w, expert, r0, r1, out, elements_of(out), 0, err);
}

uint64_t weight_fingerprint(const ggml_tensor * w, int64_t expert) {
    const size_t bytes = w->ne[2] > 1 ? w->nb[2] : ggml_nbytes(w);
    const uint8_t * base = (const uint8_t *) w->data + expert * (w->ne[2] > 1 ? w->nb[2] : 0);
    uint64_t h = 1469598103934665603ull ^ bytes;
    const size_t chunk = 64, samples = 16;
    for (size_t s = 0; s < samples; ++s) {
        size_t at = bytes <= chunk ? 0 : (bytes - chunk) * s / (samples - 1);
        size_t n  = bytes < chunk ? bytes : chunk;
        for (size_t i = 0; i < n; ++i) h = (h ^ base[at + i]) * 1099511628211ull;
    }
    return h;
}

size_t system_available_bytes() { return os::memory_available(); }

size_t weight_cache::key_hash::operator()(const key & k) const {
    return std::hash<const void *>()(k.data) ^ (size_t(k.expert) * 0x9e3779b97f4a7c15ull) ^ (size_t(k.fmt) << 7) ^
           (size_t(k.ld) << 13);
}

weight_cache::weight_cache(size_t budget_bytes, size_t headroom_bytes) : budget(budget_bytes), headroom(headroom_bytes) {}

bool weight_cache::cacheable(const ggml_tensor * w) {
    const ggml_tensor * base = w->view_src ? w->view_src : w;
    return base->buffer && base->data && ggml_backend_buffer_get_usage(base->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS;
}

size_t weight_cache::bytes_of(const ggml_tensor * w, weight_format fmt, int64_t ld) {
    return size_t(w->ne[1]) * ld * (fmt == weight_format::bf16 ? 2 : 1) +
           (fmt == weight_format::int8 ? size_t(w->ne[1]) * xdna_w8_groups(ld) * sizeof(float) : 0);
}

bool weight_cache::room_for(size_t bytes) const {
    if (used + bytes > budget) return false;
    const size_t avail = system_available_bytes();
    return avail == SIZE_MAX || avail >= bytes + headroom;
}

bool weight_cache::keeps(const ggml_tensor * w, int64_t expert, weight_format fmt, int64_t ld) const {
    if (!cacheable(w)) return false;
    std::lock_guard<std::mutex> lock(mtx);
    auto it = map.find(key{ w->data, expert, (int) fmt, ld });
    if (it != map.end() && !it->second->failed) return true;   // kept, or being converted to be
    return room_for(bytes_of(w, fmt, ld));
}

bool weight_cache::has_room(size_t bytes) {
    if (used + bytes > budget) {
        if (!said_full) {
            said_full = true;
            XDNA_LOG_WARN("NPU weight cache full (%zu MiB of GGML_XDNA_NPU_CACHE_MB=%zu): further weights are converted on "
                          "every call, which costs speed; raise the budget or use GGML_XDNA_NPU_W8=1",
                          used >> 20, budget >> 20);
        }
        return false;
    }
    const size_t avail = system_available_bytes();
    if (avail != SIZE_MAX && avail < bytes + headroom) {
        if (!said_memory) {
            said_memory = true;
            XDNA_LOG_WARN("NPU weight cache stops growing at %zu MiB: the system has %zu MiB available and the cache keeps "
                          "2 GB free", used >> 20, avail >> 20);
        }
        return false;
    }
    return true;
}

std::shared_ptr<const converted_weight> weight_cache::get(const ggml_tensor * w, int64_t expert, weight_format fmt,
                                                          int64_t ld, std::string * err, bool * first_use,
                                                          const cpu_parallel * parallel) {
    if (first_use) *first_use = false;
    if (!cacheable(w)) return nullptr;
    const uint64_t fp = weight_fingerprint(w, expert);
    const key k{ w->data, expert, (int) fmt, ld };
    const size_t need = bytes_of(w, fmt, ld);

    std::shared_ptr<entry> e;
    {
        std::unique_lock<std::mutex> lock(mtx);
        auto it = map.find(k);
        if (it != map.end()) {
            e = it->second;
            if (first_use) *first_use = !e->ready;
            cv.wait(lock, [&] { return e->ready; });
            if (e->fingerprint == fp && !e->failed) return e->data;
            // other bytes at the same address: the old conversion is stale
            used -= e->charged;
            map.erase(it);
        }
        if (!has_room(need)) return nullptr;
        e = std::make_shared<entry>();
        e->fingerprint = fp;
        e->charged = need;
        map[k] = e;
        used += need;
    }

    if (first_use) *first_use = true;
    auto data = std::make_shared<converted_weight>();
    shape_weight(w, w->ne[1], fmt, ld, *data);
    if (place) data->resident = place(w, *data);   // its NPU buffer, where it can have one
    if (!data->resident) size_elements(*data);
    bool ok = parallel && *parallel && convert_in_parallel(w, expert, *data, *parallel, err);
    if (!ok) {   // on this thread (again)
        std::vector<uint8_t> scratch;
        ok = convert_slice(w, expert, 0, data->rows, *data, scratch, err);
    }
    {
        std::lock_guard<std::mutex> lock(mtx);
        e->ready = true;
        e->failed = !ok;
        if (ok) {
            e->data = data;
        } else {
            used -= need;
            map.erase(k);
        }
    }
    cv.notify_all();
    return ok ? data : nullptr;
}

bool weight_cache::cached(const ggml_tensor * w, int64_t expert, weight_format fmt, int64_t ld) const {
    if (!cacheable(w)) return false;
    const uint64_t fp = weight_fingerprint(w, expert);
    std::lock_guard<std::mutex> lock(mtx);
    auto it = map.find(key{ w->data, expert, (int) fmt, ld });
    return it != map.end() && it->second->ready && !it->second->failed && it->second->fingerprint == fp;
}

size_t weight_cache::bytes() const {
    std::lock_guard<std::mutex> lock(mtx);
    return used;
}

size_t weight_cache::entries() const {
    std::lock_guard<std::mutex> lock(mtx);
    return map.size();
}

}  // namespace xdna::npu
