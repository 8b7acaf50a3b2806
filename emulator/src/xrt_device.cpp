// xrt::uuid, xrt::xclbin and xrt::device of the software XDNA1.
#include "emu_impl.h"
#include "xdna_emu/emu_extension.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace xrt {

std::system_error xrt_error(int err, const std::string& what) {
    return std::system_error(err, std::generic_category(), what);
}

// ---- uuid ----

uuid::uuid(const std::string& str) : m_bytes{} {
    size_t nibble = 0;
    for (size_t i = 0; i < str.size(); ++i) {
        const char ch = str[i];
        if (ch == '-' && (i == 8 || i == 13 || i == 18 || i == 23)) {
            continue;
        }
        if (!std::isxdigit(static_cast<unsigned char>(ch)) || nibble >= 32) {
            throw std::invalid_argument("invalid uuid '" + str + "'");
        }
        const int v = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0' : std::tolower(ch) - 'a' + 10;
        m_bytes[nibble / 2] = static_cast<unsigned char>(m_bytes[nibble / 2] | (nibble % 2 ? v : v << 4));
        ++nibble;
    }
    if (nibble != 32) {
        throw std::invalid_argument("invalid uuid '" + str + "'");
    }
}

std::string uuid::to_string() const {
    std::string s;
    char buf[3];
    for (size_t i = 0; i < m_bytes.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        std::snprintf(buf, sizeof(buf), "%02x", m_bytes[i]);
        s += buf;
    }
    return s;
}

// ---- xclbin ----

namespace {

using json = nlohmann::json;

[[noreturn]] void bad_xclbin(const std::string& path, const std::string& why) {
    throw std::runtime_error("xclbin '" + path + "': " + why);
}

xdna_emu::dtype xclbin_dtype(const std::string& path, const json& d, const char* field) {
    xdna_emu::dtype t;
    if (!d.contains(field) || !d[field].is_string() || !xdna_emu::dtype_parse(d[field].get<std::string>(), &t)) {
        bad_xclbin(path, std::string("design.") + field + " is missing or not a known data type");
    }
    return t;
}

uint32_t xclbin_uint(const std::string& path, const json& v, const std::string& field) {
    if (!v.is_number_unsigned()) {
        bad_xclbin(path, field + " must be a non-negative integer");
    }
    return v.get<uint32_t>();
}

} // namespace

std::string xclbin::kernel::get_name() const {
    return m_handle ? m_handle->name : std::string();
}

size_t xclbin::kernel::get_num_args() const {
    return m_handle ? m_handle->args.size() : 0;
}

xclbin::xclbin(const std::string& filename) {
    std::ifstream in(filename, std::ios::binary);
    if (!in) {
        throw std::runtime_error("xclbin '" + filename + "': cannot open file");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.compare(0, 7, "xclbin2") == 0) {
        bad_xclbin(filename, "this is a hardware xclbin; the software XDNA1 runs only the emulator's kernel set");
    }
    json doc;
    try {
        doc = json::parse(text);
    } catch (const std::exception& e) {
        bad_xclbin(filename, std::string("not an emulator xclbin (") + e.what() + ")");
    }
    if (!doc.is_object() || doc.value("format", "") != "xdna-emu-xclbin" || doc.value("version", 0) != 1) {
        bad_xclbin(filename, "not an emulator xclbin (format xdna-emu-xclbin, version 1)");
    }
    auto impl = std::make_shared<xclbin_impl>();
    impl->path = filename;
    try {
        impl->uuid = xrt::uuid(doc.value("uuid", ""));
    } catch (const std::exception& e) {
        bad_xclbin(filename, e.what());
    }
    impl->platform = doc.value("platform", "");
    if (!doc.contains("kernels") || !doc["kernels"].is_array() || doc["kernels"].empty()) {
        bad_xclbin(filename, "no kernels");
    }
    for (size_t ki = 0; ki < doc["kernels"].size(); ++ki) {
        const json& jk = doc["kernels"][ki];
        const std::string where = "kernels[" + std::to_string(ki) + "]";
        auto k = std::make_shared<xclbin_kernel_impl>();
        if (!jk.contains("name") || !jk["name"].is_string()) bad_xclbin(filename, where + ".name missing");
        k->name = jk["name"].get<std::string>();
        if (!jk.contains("args") || !jk["args"].is_array()) bad_xclbin(filename, where + ".args missing");
        for (size_t ai = 0; ai < jk["args"].size(); ++ai) {
            const json& ja = jk["args"][ai];
            const std::string aw = where + ".args[" + std::to_string(ai) + "]";
            arg_desc a;
            a.name = ja.value("name", "");
            const std::string kind = ja.value("kind", "");
            if (kind != "scalar" && kind != "global") bad_xclbin(filename, aw + ".kind must be scalar or global");
            a.global = kind == "global";
            if (ja.contains("size")) a.size = xclbin_uint(filename, ja["size"], aw + ".size");
            if (a.global) {
                if (!ja.contains("bank")) bad_xclbin(filename, aw + ".bank missing");
                a.bank = static_cast<int>(xclbin_uint(filename, ja["bank"], aw + ".bank"));
            }
            k->args.push_back(a);
        }
        impl->kernels.push_back(k);
    }
    if (!doc.contains("design") || !doc["design"].is_object()) {
        bad_xclbin(filename, "no design");
    }
    const json& jd = doc["design"];
    xdna_emu::design& d = impl->design;
    d.name = jd.value("name", "");
    d.kernel_name = impl->kernels[0]->name;
    d.a = xclbin_dtype(filename, jd, "a");
    d.b = xclbin_dtype(filename, jd, "b");
    d.c = xclbin_dtype(filename, jd, "c");
    if (jd.value("b_layout", "") != "nk") bad_xclbin(filename, "design.b_layout must be \"nk\"");
    if (!jd.contains("tile") || !jd["tile"].is_array() || jd["tile"].size() != 3) {
        bad_xclbin(filename, "design.tile must be [m, k, n]");
    }
    d.tile_m = xclbin_uint(filename, jd["tile"][0], "design.tile[0]");
    d.tile_k = xclbin_uint(filename, jd["tile"][1], "design.tile[1]");
    d.tile_n = xclbin_uint(filename, jd["tile"][2], "design.tile[2]");
    d.columns = xclbin_uint(filename, jd.value("columns", json()), "design.columns");
    d.k = xclbin_uint(filename, jd.value("k", json()), "design.k");
    const std::string bad = xdna_emu::design_check(d);
    if (!bad.empty()) bad_xclbin(filename, "design: " + bad);
    m_handle = std::move(impl);
}

std::vector<xclbin::kernel> xclbin::get_kernels() const {
    std::vector<kernel> out;
    if (m_handle) {
        for (const auto& k : m_handle->kernels) out.emplace_back(k);
    }
    return out;
}

xclbin::kernel xclbin::get_kernel(const std::string& name) const {
    if (m_handle) {
        for (const auto& k : m_handle->kernels) {
            if (k->name == name) return kernel(k);
        }
    }
    return kernel();
}

uuid xclbin::get_uuid() const {
    return m_handle ? m_handle->uuid : uuid();
}

std::string xclbin::get_xsa_name() const {
    return m_handle ? m_handle->platform : std::string();
}

// ---- device ----

device::device(unsigned int didx) {
    if (didx != 0) {
        throw std::runtime_error("No such device index " + std::to_string(didx) +
                                 " (the software XDNA1 emulates one NPU, index 0)");
    }
    m_handle = std::make_shared<device_impl>(xdna_emu::config::from_env());
    static std::once_flag banner;
    const xdna_emu::config& cfg = m_handle->cfg;
    std::call_once(banner, [&cfg] {
        xdna_emu::log(1, cfg.log_level, "software XDNA1 emulator, no NPU hardware involved: %s",
                      cfg.describe().c_str());
    });
}

} // namespace xrt

xdna::xdna1_device_timing xdna_emu::device_timing(const xrt::device& device) {
    return device ? device.get_handle()->cfg.timing() : xdna::xdna1_device_timing();
}

namespace xrt {

uuid device::register_xclbin(const xrt::xclbin& xb) {
    if (!m_handle) throw xrt_error(EINVAL, "register_xclbin on an empty device");
    if (!xb) throw xrt_error(EINVAL, "register_xclbin with an empty xclbin");
    std::lock_guard<std::mutex> lock(m_handle->mu);
    m_handle->registered[xb.get_uuid()] = xb.get_handle();
    return xb.get_uuid();
}

device::operator xclDeviceHandle() const {
    return m_handle.get();
}

std::string device::get_info_string(info::device param) const {
    if (!m_handle) throw xrt_error(EINVAL, "get_info on an empty device");
    switch (param) {
        case info::device::name: {
            const auto& cfg = m_handle->cfg;
            std::string name = "NPU Phoenix (software XDNA1 emulator, mode " + std::string(xdna_emu::mode_name(cfg.mode));
            if (cfg.mode == xdna_emu::mode::null) name += ": results invalid";
            return name + ")";
        }
        case info::device::bdf:
            return "0000:00:00.0 (emulated)";
        default:
            throw xrt_error(ENOTSUP, "device info query not supported by the software XDNA1");
    }
}

} // namespace xrt
