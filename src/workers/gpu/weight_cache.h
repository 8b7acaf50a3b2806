// The GPU worker's resident weights: each weight the worker computes rows of is copied to the device once, whole,
// and kept while it fits the budget (GGML_XDNA_GPU_CACHE_MB), least recently used out. The worker then reads a view
// of whichever rows the planner gives it, so a changing split never costs another copy.
//
// A weight is known by its host address, size, type, shape and layout, plus a fingerprint of sampled bytes: host memory
// that is freed and reused for another tensor of the same shape (test-backend-ops does this with every case) must not
// be served the old copy.
//
// A weight in the CPU backend's repacked layout (CPU_REPACK: 8 rows interleaved) is copied in as its plain ggml blocks,
// the exact inverse of the repack (src/convert): the device reads only ggml's own layouts, and a view of any rows of
// the plain copy is a valid weight, so the GPU's rows need no 8-row alignment.
#pragma once

#include "ggml-backend.h"

#include <cstdint>
#include <list>
#include <unordered_map>
#include <unordered_set>

namespace xdna::gpu {

class weight_cache {
  public:
    weight_cache(ggml_backend_buffer_type_t buft, size_t budget_bytes);
    ~weight_cache();
    weight_cache(const weight_cache &) = delete;
    weight_cache & operator=(const weight_cache &) = delete;

    struct lookup {
        ggml_tensor * tensor   = nullptr;   // the device copy, or null when it cannot be held
        bool          uploaded = false;     // copied in by this call
        bool          again    = false;     // ...although it had been resident before (evicted since)
        double        upload_seconds = 0.0;
    };

    // The device copy of host weight `w`, copied in (after evicting the least recently used copies) when absent.
    // With rows [r0, r1) (r1 > 0): a copy of only those rows of every expert, dense ([K, r1 - r0, experts]), for a
    // device whose MUL_MAT_ID reads a weight's experts as if they were dense (ggml-vulkan ignores the expert stride of a
    // view): a copy per row range, kept like the others, so a boundary that moves costs one more copy.
    lookup get(const ggml_tensor * w, int64_t r0 = 0, int64_t r1 = 0);

    // Whether `w` could be held at all (its device size is within the budget).
    bool fits(const ggml_tensor * w) const;

    size_t budget() const { return budget_bytes; }
    size_t used() const { return used_bytes; }
    size_t size() const { return entries.size(); }
    int64_t uploads() const { return n_uploads; }

    void clear();

  private:
    struct key_t {
        const void * data;
        size_t       bytes;
        int          type;
        int64_t      ne[4];
        bool         repacked;
        int64_t      r0, r1;   // a copy of these rows of every expert (r1 == 0: whole)
        bool operator==(const key_t & o) const;
    };
    struct key_hash {
        size_t operator()(const key_t & k) const;
    };
    struct entry {
        key_t                 key;
        uint64_t              fingerprint;
        size_t                bytes;   // device allocation
        ggml_context *        ctx;
        ggml_backend_buffer_t buf;
        ggml_tensor *         tensor;
    };

    static key_t key_of(const ggml_tensor * w, int64_t r0, int64_t r1);
    static uint64_t fingerprint_of(const ggml_tensor * w);
    size_t device_size(const ggml_tensor * w) const;
    static bool copy_in(ggml_tensor * dst, const ggml_tensor * w, bool repacked, int64_t r0, int64_t r1);
    void evict_lru();
    void release(entry & e);

    ggml_backend_buffer_type_t buft;
    size_t                     budget_bytes;
    size_t                     used_bytes = 0;
    int64_t                    n_uploads  = 0;

    std::list<entry>                                                 lru;   // most recently used first
    std::unordered_map<key_t, std::list<entry>::iterator, key_hash>  entries;
    std::unordered_set<key_t, key_hash>                              seen;  // every weight ever resident
};

}  // namespace xdna::gpu
