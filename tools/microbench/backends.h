// The backends the microbenchmarks compare: the pinned ggml's CPU backend, found next to the libggml this program
// is linked against (the way llama.cpp's DL build finds it), and the plugin, found next to this program (the build's
// bin folder) unless --plugin= names it.
#pragma once

#include "ggml-backend.h"

#include <string>

namespace xdna_microbench {

struct backends {
    ggml_backend_dev_t         cpu_dev     = nullptr;
    ggml_backend_dev_t         xdna_dev    = nullptr;
    ggml_backend_buffer_type_t repack_buft = nullptr;   // the CPU's CPU_REPACK buffer type, if it has one
    std::string                error;                   // why a backend is missing
};

// Loads both once; later calls return the same.
const backends & load(const std::string & plugin_path = "");

// Threads for a backend of the CPU or the plugin (both take ggml_backend_set_n_threads).
void set_threads(ggml_backend_t backend, int n_threads);

}  // namespace xdna_microbench
