// npu_xrt() where the C interface comes from a DLL (Windows): ggml-xdna-xrt.dll in the plugin's own folder, built by
// the user with MSVC against XRT (windows/xrt-shim/) or, for the tests, the software XDNA1 built with MinGW.
#include "npu_xrt_api.h"

#include "os/os.h"

#include <mutex>

namespace xdna {

namespace {

constexpr const char * dll_name = "ggml-xdna-xrt.dll";

struct loaded {
    npu_xrt_api api{};
    bool ok = false;
    std::string why;
};

template <typename F> bool get(os::library * lib, const char * name, F & fn, std::string * missing) {
    fn = reinterpret_cast<F>(os::library_symbol(lib, name));
    if (!fn && missing->empty()) *missing = name;
    return fn != nullptr;
}

loaded load() {
    loaded l;
    const std::string path = os::dir_name(os::module_path((const void *) &npu_xrt)) + "\\" + dll_name;
    std::string why;
    os::library * lib = os::library_open(path, &why);   // kept for the life of the process
    if (!lib) {
        l.why = "cannot load " + path + ": " + why + " (the NPU needs it beside the plugin: see the README's Windows "
                "section)";
        return l;
    }
    npu_xrt_api & a = l.api;
    std::string missing;
    get(lib, "xdna_xrt_version", a.version, &missing);
    get(lib, "xdna_xrt_kind", a.kind, &missing);
    get(lib, "xdna_xrt_last_error", a.last_error, &missing);
    get(lib, "xdna_xrt_device_open", a.device_open, &missing);
    get(lib, "xdna_xrt_device_name", a.device_name, &missing);
    get(lib, "xdna_xrt_device_close", a.device_close, &missing);
    get(lib, "xdna_xrt_xclbin_register", a.xclbin_register, &missing);
    get(lib, "xdna_xrt_xclbin_free", a.xclbin_free, &missing);
    get(lib, "xdna_xrt_context_create", a.context_create, &missing);
    get(lib, "xdna_xrt_context_free", a.context_free, &missing);
    get(lib, "xdna_xrt_kernel_open", a.kernel_open, &missing);
    get(lib, "xdna_xrt_kernel_group", a.kernel_group, &missing);
    get(lib, "xdna_xrt_kernel_free", a.kernel_free, &missing);
    get(lib, "xdna_xrt_bo_alloc", a.bo_alloc, &missing);
    get(lib, "xdna_xrt_bo_sub", a.bo_sub, &missing);
    get(lib, "xdna_xrt_bo_map", a.bo_map, &missing);
    get(lib, "xdna_xrt_bo_write", a.bo_write, &missing);
    get(lib, "xdna_xrt_bo_sync", a.bo_sync, &missing);
    get(lib, "xdna_xrt_bo_free", a.bo_free, &missing);
    get(lib, "xdna_xrt_run_start", a.run_start, &missing);
    get(lib, "xdna_xrt_run_wait", a.run_wait, &missing);
    get(lib, "xdna_xrt_run_state", a.run_state, &missing);
    get(lib, "xdna_xrt_run_free", a.run_free, &missing);
    get(lib, "xdna_xrt_device_timing", a.device_timing, &missing);
    get(lib, "xdna_xrt_set_run_observer", a.set_run_observer, &missing);
    if (!missing.empty()) {
        l.why = path + " does not export " + missing + ": not a ggml-xdna XRT shim, or one of another version";
        return l;
    }
    if (a.version() != XDNA_XRT_C_VERSION) {
        l.why = path + " implements interface version " + std::to_string(a.version()) + ", this plugin needs " +
                std::to_string(XDNA_XRT_C_VERSION) + ": rebuild it from this plugin's sources";
        return l;
    }
    l.ok = true;
    return l;
}

const loaded & the_dll() {
    static const loaded l = load();
    return l;
}

} // namespace

const npu_xrt_api * npu_xrt(std::string * why) {
    const loaded & l = the_dll();
    if (!l.ok && why) *why = l.why;
    return l.ok ? &l.api : nullptr;
}

bool npu_xrt_is_hardware() {
    const npu_xrt_api * a = npu_xrt(nullptr);
    return a && a->kind() == XDNA_XRT_KIND_XRT;
}

} // namespace xdna
