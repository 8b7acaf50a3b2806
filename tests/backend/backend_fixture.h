// Loads the pinned ggml's CPU backend and the plugin under test, the way llama.cpp does (DL build).
// The paths come from the build: XDNA_TEST_LLAMA_BIN (llama.cpp's bin folder) and XDNA_TEST_PLUGIN (libggml-xdna.so).
#pragma once

#include "ggml-backend.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>

namespace xdna_test {

struct loaded_backends {
    ggml_backend_dev_t cpu_dev  = nullptr;
    ggml_backend_dev_t xdna_dev = nullptr;
    ggml_backend_buffer_type_t repack_buft = nullptr;
};

inline const loaded_backends & load_backends() {
    static loaded_backends lb = [] {
        loaded_backends b;
        ggml_backend_load_all_from_path(XDNA_TEST_LLAMA_BIN);
        ggml_backend_reg_t reg = ggml_backend_load(XDNA_TEST_PLUGIN);
        b.cpu_dev  = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        b.xdna_dev = reg ? ggml_backend_reg_dev_get(reg, 0) : nullptr;
        if (b.cpu_dev) {
            auto get_extra = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(
                ggml_backend_dev_backend_reg(b.cpu_dev), "ggml_backend_dev_get_extra_bufts");
            for (auto * t = get_extra ? get_extra(b.cpu_dev) : nullptr; t && *t; ++t) {
                if (strcmp(ggml_backend_buft_name(*t), "CPU_REPACK") == 0) b.repack_buft = *t;
            }
        }
        return b;
    }();
    return lb;
}

// Rows the NPU computed, from the last report line the plugin appended at backend free (GGML_XDNA_REPORT); -1 when
// no report file is set.
inline long long npu_rows_reported() {
    const char * path = getenv("GGML_XDNA_REPORT");
    if (!path) return -1;
    std::ifstream f(path);
    std::string line, last;
    while (std::getline(f, line)) last = line;
    std::smatch m;
    return std::regex_search(last, m, std::regex("npu: ([0-9]+) rows")) ? std::stoll(m[1]) : 0;
}

}  // namespace xdna_test
