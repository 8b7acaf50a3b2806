// Software XDNA1: xrt::hw_context (the subset of XRT's hardware-context header the project uses).
// A hardware context holds one xclbin's design on the NPU. XDNA1 has 6, shared by every process on the machine.
#ifndef XDNA_EMU_XRT_HW_CONTEXT_H
#define XDNA_EMU_XRT_HW_CONTEXT_H

#include "xrt/xrt_device.h"
#include "xrt/xrt_uuid.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace xrt {

class hw_context_impl;

class hw_context {
public:
    enum class access_mode : uint8_t { exclusive = 0, shared = 1 };
    using cfg_param_type = std::map<std::string, uint32_t>;

    hw_context() = default;
    // Throws std::system_error (as the amdxdna driver's ioctl failure) when no hardware context is free.
    hw_context(const xrt::device& device, const xrt::uuid& xclbin_id, access_mode mode);
    hw_context(const xrt::device& device, const xrt::uuid& xclbin_id, const cfg_param_type& cfg_param);
    hw_context(const xrt::device& device, const xrt::uuid& xclbin_id)
        : hw_context(device, xclbin_id, access_mode::shared) {}

    xrt::device get_device() const;
    xrt::uuid get_xclbin_uuid() const;
    xrt::xclbin get_xclbin() const;
    access_mode get_mode() const;

    explicit operator bool() const { return m_handle != nullptr; }
    const std::shared_ptr<hw_context_impl>& get_handle() const { return m_handle; }

private:
    std::shared_ptr<hw_context_impl> m_handle;
};

} // namespace xrt

#endif
