// Finding the default kernel manifest next to the binary that contains the runtime (the plugin).
#include "npu_runtime.h"

#include "os/os.h"

namespace xdna {

std::string npu_default_manifest_path() {
    const std::string self = os::module_path(reinterpret_cast<const void*>(&npu_default_manifest_path));
    if (self.empty()) {
        return "";
    }
    const std::string dir = os::dir_name(self);
    for (const char* rel : {"/kernels/manifest.json", "/../kernels/manifest.json",
                            "/../share/ggml-xdna/kernels/manifest.json"}) {
        const std::string p = dir + rel;
        if (os::stat_file(p).regular) {
            return p;
        }
    }
    return "";
}

} // namespace xdna
