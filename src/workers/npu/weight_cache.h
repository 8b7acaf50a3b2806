// The NPU's converted weights: each model weight is converted once (to bf16, or int8 with scales) and kept, up to a
// budget (GGML_XDNA_NPU_CACHE_MB). Past the budget the worker converts the rows it needs on every call; the log says
// so once. The cache also never grows to within 2 GB of the memory the system has available.
//
// Only weights in buffers marked as model weights are cached: their bytes never change while the buffer lives.
// Every entry also carries a fingerprint of the weight's bytes, checked on each lookup, so a buffer freed and another
// allocated at the same address (a model reloaded, say) is converted afresh instead of giving a wrong result.
#pragma once

#include "ggml.h"
#include "workers/multiply.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace xdna::npu {

enum class weight_format { bf16, int8 };

struct resident_weight;   // resident_weight.h: the weight in an NPU buffer, in K panels

// One converted weight: rows x ld elements (ld = K padded to the kernel's K block, zeros past K), and for int8 one
// scale per row and per 1,024 weights. The elements are in `bf16` or `i8`, row-major, or, once the NPU worker has
// moved them into an NPU buffer, in `resident` (and the vectors are empty).
struct converted_weight {
    weight_format         format = weight_format::bf16;
    int64_t               rows = 0, k = 0, ld = 0;
    std::vector<uint16_t> bf16;
    std::vector<int8_t>   i8;
    std::vector<float>    scales;     // rows x groups
    int64_t               groups = 0;
    std::shared_ptr<resident_weight> resident;
};

// Converts rows [r0, r1) of expert `expert` of `w` into `out` (sized by the caller: (r1 - r0) rows).
bool convert_weight_rows(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, weight_format fmt,
                         int64_t ld, converted_weight & out, std::string * err);

class weight_cache {
  public:
    explicit weight_cache(size_t budget_bytes, size_t headroom_bytes = size_t(2) << 30);

    // The whole converted weight (one expert), converting it now if needed; null when it does not fit the budget
    // or the weight cannot be cached (then the caller converts the rows it needs itself). Thread-safe; two callers
    // asking for the same weight convert it once. `first_use`, if given, says whether the call converted the weight
    // (or waited for another caller converting it) rather than finding it ready.
    // `parallel`, if given, converts the weight's rows in slices on its threads (one thread converts a 3,072 x 1,024
    // Q4_0 weight in ~10 ms); without it, or where it does not run, the calling thread converts it.
    std::shared_ptr<const converted_weight> get(const ggml_tensor * w, int64_t expert, weight_format fmt, int64_t ld,
                                                std::string * err, bool * first_use = nullptr,
                                                const cpu_parallel * parallel = nullptr);

    // Whether the weight is converted and ready (its bytes unchanged), without converting it.
    bool cached(const ggml_tensor * w, int64_t expert, weight_format fmt, int64_t ld) const;
    // Whether get() keeps the weight: converted already, or room for it in the budget and the system's memory now
    // (past them the caller converts the rows it needs on every call). Says nothing in the log.
    bool keeps(const ggml_tensor * w, int64_t expert, weight_format fmt, int64_t ld) const;
    // True if the weight can be kept at all (model weights only).
    static bool cacheable(const ggml_tensor * w);

    // Asked for every weight the cache converts, before converting it: an NPU buffer for its elements (resident_weight.h),
    // which the conversion then writes and syncs, or null (they stay in the converted_weight's own vectors). `shape`
    // has the weight's format, rows and ld. Where the NPU worker keeps weights in NPU buffers. Set before the first get().
    using placer = std::function<std::shared_ptr<resident_weight>(const ggml_tensor * w, const converted_weight & shape)>;
    void set_placer(placer p) { place = std::move(p); }

    size_t bytes() const;
    size_t entries() const;

  private:
    struct entry {
        uint64_t fingerprint = 0;
        size_t   charged = 0;       // bytes counted against the budget
        bool     ready = false;
        bool     failed = false;
        std::shared_ptr<converted_weight> data;
    };
    struct key {
        const void * data; int64_t expert; int fmt; int64_t ld;
        bool operator==(const key & o) const { return data == o.data && expert == o.expert && fmt == o.fmt && ld == o.ld; }
    };
    struct key_hash { size_t operator()(const key & k) const; };

    bool has_room(size_t bytes);   // mtx held
    bool room_for(size_t bytes) const;   // mtx held; has_room without its log lines
    static size_t bytes_of(const ggml_tensor * w, weight_format fmt, int64_t ld);

    size_t budget, headroom;
    placer place;
    mutable std::mutex mtx;
    std::condition_variable cv;
    std::unordered_map<key, std::shared_ptr<entry>, key_hash> map;
    size_t used = 0;
    bool   said_full = false, said_memory = false;
};

// A cheap fingerprint of a tensor's bytes (size, and 16 samples of 64 bytes spread over it).
uint64_t weight_fingerprint(const ggml_tensor * w, int64_t expert);

// Bytes of memory the system has available now (MemAvailable), or SIZE_MAX when unknown.
size_t system_available_bytes();

}  // namespace xdna::npu
