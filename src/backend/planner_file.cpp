#include "backend/planner_file.h"

#include "backend/device.h"
#include "os/os.h"
#include "util/log.h"
#include "util/own_file.h"
#include "workers/npu/npu_worker.h"
#include "xdna_ggml_compat.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

namespace xdna {

namespace {

constexpr const char * header = "ggml-xdna planner state 6";   // 6: weights per call; 5: no regrouping model; 4: pairs
constexpr const char * header_any = "ggml-xdna planner state ";   // of any version: a file this plugin wrote
// the plugin writes a few KB (a line per shape); a larger file is not one of its own
constexpr size_t max_state_bytes = size_t(4) << 20;
constexpr size_t max_manifest_bytes = size_t(4) << 20;   // as npu_manifest::load reads it

bool is_state_file(const std::string & head) { return head.rfind(header_any, 0) == 0; }

// Paths refused once, with one line: not read, not written, and not named again (the state is written at every
// backend free).
std::mutex refused_mutex;
std::set<std::string> refused_paths;

bool refused(const std::string & path) {
    std::lock_guard<std::mutex> lock(refused_mutex);
    return refused_paths.count(path) != 0;
}

void refuse(const std::string & path) {
    std::lock_guard<std::mutex> lock(refused_mutex);
    refused_paths.insert(path);
}

uint64_t fnv1a(const std::string & s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

// a file's size and modification time: a rebuilt plugin or kernel set is another one
std::string file_stamp(const std::string & path) {
    const os::file_info fi = path.empty() ? os::file_info{} : os::stat_file(path);
    if (!fi.exists || !fi.error.empty()) return "?";
    return std::to_string((long long) fi.size) + "@" + std::to_string((long long) fi.mtime);
}

// the software XDNA1's settings (its speeds, dispatch, mode): a modelled NPU at another speed is another NPU
std::string emulator_settings() {
    std::vector<std::string> vars;
    for (const std::string & e : os::environment()) {
        if (e.rfind("XDNA_EMU_", 0) == 0 && e.rfind("XDNA_EMU_LOG", 0) != 0) vars.push_back(e);
    }
    std::sort(vars.begin(), vars.end());
    std::string out;
    for (const std::string & v : vars) out += (out.empty() ? "" : " ") + v;
    return out.empty() ? "-" : out;
}

std::string plugin_path() { return os::module_path((const void *) &planner_file_identity); }

}  // namespace

std::string planner_file_identity(const device_state & st, int threads) {
    // the kernel set the NPU worker runs (no NPU: none)
    std::string kernels, why;
    const bool read = st.npu &&
        read_regular_file(st.npu->kernels_path(), max_manifest_bytes, &kernels, &why) == file_read::ok;
    char hash[32];
    snprintf(hash, sizeof(hash), "%016llx", (unsigned long long) fnv1a(kernels));
    return "cpu '" + os::cpu_model_name() + "', " + std::to_string(os::cores_available()) + " cores, " +
           std::to_string(threads) + " threads; plugin " + file_stamp(plugin_path()) + ", ggml " + XDNA_GGML_VERSION +
           "; " + st.description() + "; kernels " + (read ? hash : "-") + "; emulator " + emulator_settings();
}

std::string planner_file_path(const std::string & setting, const std::string & identity) {
    if (setting != "auto") return setting;
    std::string why;
    std::string dir = os::cache_dir(&why);
    if (dir.empty()) {
        XDNA_LOG_WARN("planner state: GGML_XDNA_PLANNER_STATE=auto, but %s; nothing is kept", why.c_str());
        return "";
    }
    for (const char * sub : { "", "/ggml-xdna", "/planner" }) {   // the cache folder itself may not exist yet
        dir += sub;
        if (!os::make_dir(dir, &why)) {
            XDNA_LOG_WARN("planner state: cannot create %s: %s; nothing is kept", dir.c_str(), why.c_str());
            return "";
        }
    }
    char name[32];
    snprintf(name, sizeof(name), "/%016llx.txt", (unsigned long long) fnv1a(identity));
    return dir + name;
}

void planner_file_read(split_planner & planner, const std::string & path, const std::string & identity) {
    std::string text, why;
    const file_read got = read_regular_file(path, max_state_bytes, &text, &why);
    if (got == file_read::absent) {
        XDNA_LOG_INFO("planner state: no file %s yet; it is written at exit", path.c_str());
        return;
    }
    if (got == file_read::refused) {
        XDNA_LOG_WARN("planner state: %s %s; nothing is read or kept", path.c_str(), why.c_str());
        refuse(path);
        return;
    }
    const size_t l1 = text.find('\n'), l2 = l1 == std::string::npos ? l1 : text.find('\n', l1 + 1);
    if (l2 == std::string::npos || !is_state_file(text)) {
        XDNA_LOG_WARN("planner state: %s is not a planner state file: left as it is; nothing is read or kept",
                      path.c_str());
        refuse(path);
        return;
    }
    if (text.compare(0, l1, header) != 0) {
        XDNA_LOG_INFO("planner state: %s was written by another version of the plugin; not read (it is replaced at "
                      "exit)", path.c_str());
        return;
    }
    if (text.compare(l1 + 1, l2 - l1 - 1, identity) != 0) {
        XDNA_LOG_INFO("planner state: %s was written on another machine, build, NPU, kernel set or thread count; "
                      "not read (it is replaced at exit)", path.c_str());
        return;
    }
    why.clear();
    const size_t n = planner.load_state(text.substr(l2 + 1), &why);
    if (n == 0 && !why.empty()) {
        XDNA_LOG_WARN("planner state: %s: %s; not read (it is replaced at exit)", path.c_str(), why.c_str());
        return;
    }
    XDNA_LOG_INFO("planner state: %zu shapes read from %s", n, path.c_str());
}

void planner_file_write(const split_planner & planner, const std::string & path, const std::string & identity) {
    if (refused(path)) return;
    const std::string text = std::string(header) + "\n" + identity + "\n" + planner.save_state();
    std::string why;
    const bool ok = replace_own_file(path, is_state_file, [&](FILE * f) {
        return fwrite(text.data(), 1, text.size(), f) == text.size();
    }, &why);
    if (!ok) {
        XDNA_LOG_WARN("planner state: %s %s; nothing is kept", path.c_str(), why.c_str());
        refuse(path);
    }
}

}  // namespace xdna
