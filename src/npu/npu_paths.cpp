// Finding the default kernel manifest next to the binary that contains the runtime (the plugin .so).
#include "npu_runtime.h"

#include <dlfcn.h>
#include <sys/stat.h>

namespace xdna {

std::string npu_default_manifest_path() {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&npu_default_manifest_path), &info) || !info.dli_fname) {
        return "";
    }
    std::string dir = info.dli_fname;
    const size_t slash = dir.find_last_of('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
    for (const char* rel : {"/kernels/manifest.json", "/../kernels/manifest.json",
                            "/../share/ggml-xdna/kernels/manifest.json"}) {
        const std::string p = dir + rel;
        struct stat st;
        if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            return p;
        }
    }
    return "";
}

} // namespace xdna
