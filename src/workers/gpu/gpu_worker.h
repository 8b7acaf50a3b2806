// The GPU worker: a private instance of a ggml GPU device (Vulkan on the APU's Radeon; CUDA, RPC or any other ggml
// device elsewhere) computing a range of output rows of a claimed multiply on its own thread.
//
// Each weight is copied to the device once, whole (weight_cache, least recently used out), and the worker computes a
// one-node graph on a view of its rows. Activations and result rows are mapped in place where the device can map host
// memory (checked first: several backends crash when asked; Vulkan maps page-aligned ranges although its caps say no),
// and copied in and out otherwise. It never makes a result wrong: any failure is reported and the engine recomputes
// those rows on the CPU.
//
// A weight in the CPU backend's repacked layout (CPU_REPACK) is copied to the device as its plain ggml blocks, the
// repack inverted exactly (weight_cache.h), so the GPU takes rows of the x86 default layouts of Q4_0, Q4_K, IQ4_NL and
// MXFP4 too.
#pragma once

#include "workers/async_worker.h"

#include "ggml-backend.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace xdna {

struct gpu_worker_options {
    size_t cache_bytes = size_t(2048) << 20;   // GGML_XDNA_GPU_CACHE_MB
    bool   map_host    = true;                 // map activations and results where the device can (false: always copy)
    bool   map_any_vulkan = false;             // tests: map on any Vulkan device (by default only on an integrated one)
    // How result rows come back where they are copied: straight into their strided place (backends with 2-D copies:
    // CUDA, Vulkan), or one contiguous read and a scatter on the host. `automatic` times both on the first runs and
    // keeps the faster (a 2-D copy into pageable memory is not always the fast one).
    enum class read_mode { automatic, strided, scatter };
    read_mode out = read_mode::automatic;
    // Asked before each run, where set: whether the device is still there (false, with why: a remote server that
    // exited, whose next message would abort the process). Once it says no, the worker takes no more work and
    // leaves the device's objects unfreed (freeing them sends messages too).
    std::function<bool(std::string * why)> alive;
};

// How the device was used, for tests: its runs, failures and times are the engine's records (work_record.h).
struct gpu_worker_stats {
    int64_t weight_uploads = 0;       // weights copied to the device (first time or after eviction)
    int64_t mapped_runs = 0;          // runs that mapped activations and results instead of copying them
    int64_t strided_reads = 0;        // result rows read with one 2-D copy
    int64_t scatter_reads = 0;        // result rows read contiguously and scattered on the host
    size_t  resident_bytes = 0;       // device memory held by resident weights now
    size_t  resident_weights = 0;
    double  upload_seconds = 0.0;     // weights
    double  io_seconds = 0.0;         // activations in, result rows out (including the computation's wait)
};

class gpu_worker final : public async_worker {
  public:
    // `dev`: the device to compute on (never the XDNA device itself). The backend instance is created on the worker's thread at its first multiply, so a GPU that never gets
    // a multiply (llama.cpp runs the whole model on it with -ngl 99) costs nothing here.
    explicit gpu_worker(ggml_backend_dev_t dev, gpu_worker_options opts = {});
    ~gpu_worker() override;

    worker_kind kind() const override { return worker_kind::gpu; }
    const char * name() const override { return label.c_str(); }
    bool accepts(const multiply & m) const override;
    int64_t row_align(const multiply & m) const override;

    ggml_backend_dev_t device() const { return dev; }
    // whether the device can map host memory (caps.buffer_from_host_ptr and the function present)
    bool can_map_host() const { return map_host; }
    gpu_worker_stats stats() const;

  protected:
    work_record run(const multiply & m, row_range rows) override;

  private:
    struct impl;
    struct call;
    // the phases of one run: the device, the one-node graph on a view of the rows, its memory, then compute and read
    work_record open_backend();
    bool still_there();
    work_record build_graph(call & c);
    work_record place_tensors(call & c);
    work_record compute_rows(call & c);
    work_record failed(work_failure why, const char * detail, double t0);
    std::unique_ptr<impl> p;
    ggml_backend_dev_t         dev;
    gpu_worker_options         opts;
    std::atomic<bool>          map_host{ false };   // cleared when the device refuses a mapping
    std::atomic<bool>          lost{ false };       // opts.alive said no: no more work, nothing freed
    std::string                label;
};

}  // namespace xdna
