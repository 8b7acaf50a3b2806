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

// The last summary line ("ggml-xdna: ...") the plugin appended to its report at backend free (GGML_XDNA_REPORT); empty
// without one.
inline std::string last_report_line() {
    const char * path = getenv("GGML_XDNA_REPORT");
    std::ifstream f(path ? path : "");
    std::string line, last;
    while (std::getline(f, line)) {
        if (line.rfind("ggml-xdna: ", 0) == 0) last = line;
    }
    return last;
}

// The number `pattern`'s group `group` catches in that line; 0 where it does not match.
inline long long reported(const char * pattern, int group = 1) {
    const std::string last = last_report_line();
    std::smatch m;
    return std::regex_search(last, m, std::regex(pattern)) ? std::stoll(m[group]) : 0;
}

// Rows the NPU computed, from that line; -1 when no report file is set.
inline long long npu_rows_reported() {
    return getenv("GGML_XDNA_REPORT") ? reported("npu: ([0-9]+) rows") : -1;
}

}  // namespace xdna_test
