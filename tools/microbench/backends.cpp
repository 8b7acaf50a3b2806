#include "backends.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace xdna_microbench {

namespace {

std::string dir_of(const std::string & path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string ggml_dir() {
    Dl_info info{};
    if (dladdr((void *) &ggml_backend_load_all_from_path, &info) != 0 && info.dli_fname) return dir_of(info.dli_fname);
    return ".";
}

std::string exe_dir() {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return ".";
    buf[n] = 0;
    return dir_of(buf);
}

}  // namespace

const backends & load(const std::string & plugin_path) {
    static backends b = [&] {
        backends r;
        // the CPU backend module lives next to libggml in a GGML_BACKEND_DL build
        ggml_backend_load_all_from_path(ggml_dir().c_str());
        r.cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        if (!r.cpu_dev) r.error = "no CPU backend next to " + ggml_dir();

        const std::string plugin = plugin_path.empty() ? exe_dir() + "/libggml-xdna.so" : plugin_path;
        ggml_backend_reg_t reg = ggml_backend_load(plugin.c_str());
        if (reg && ggml_backend_reg_dev_count(reg) > 0) {
            r.xdna_dev = ggml_backend_reg_dev_get(reg, 0);
        } else if (r.error.empty()) {
            r.error = "the plugin did not load from " + plugin + " (pass --plugin=)";
        }
        if (r.cpu_dev) {
            auto get_extra = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(
                ggml_backend_dev_backend_reg(r.cpu_dev), "ggml_backend_dev_get_extra_bufts");
            for (auto * t = get_extra ? get_extra(r.cpu_dev) : nullptr; t && *t; ++t) {
                if (strcmp(ggml_backend_buft_name(*t), "CPU_REPACK") == 0) r.repack_buft = *t;
            }
        }
        return r;
    }();
    return b;
}

void set_threads(ggml_backend_t backend, int n_threads) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    auto fn = (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev),
                                                                              "ggml_backend_set_n_threads");
    if (fn) fn(backend, n_threads);
}

}  // namespace xdna_microbench
