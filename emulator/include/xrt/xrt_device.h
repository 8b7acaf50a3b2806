// Software XDNA1: xrt::device (the subset of XRT's xrt/xrt_device.h the project uses).
#ifndef XDNA_EMU_XRT_DEVICE_H
#define XDNA_EMU_XRT_DEVICE_H

#include "xrt/deprecated/xrt.h"
#include "xrt/experimental/xrt_xclbin.h"
#include "xrt/xrt_uuid.h"

#include <memory>
#include <string>

namespace xrt {

namespace info {
// Same order (so the same values) as XRT's xrt::info::device, up to the last one the project asks for.
enum class device : unsigned int {
    bdf,
    interface_uuid,
    kdma,
    max_clock_frequency_mhz,
    m2m,
    name,
};

template <typename T, T param> struct param_traits;
template <> struct param_traits<device, device::bdf>  { using return_type = std::string; };
template <> struct param_traits<device, device::name> { using return_type = std::string; };
} // namespace info

class device_impl;

class device {
public:
    device() = default;
    // Opens NPU number didx; the emulator has exactly one (index 0) and throws std::runtime_error for any other.
    explicit device(unsigned int didx);
    explicit device(int didx) : device(static_cast<unsigned int>(didx)) {}

    // Makes the xclbin known to the device so that a hardware context can be created from its uuid.
    uuid register_xclbin(const xrt::xclbin& xclbin);

    template <info::device param>
    typename info::param_traits<info::device, param>::return_type get_info() const {
        return get_info_string(param);
    }

    // XRT converts a device to its shim handle implicitly; the legacy xrt::bo constructors rely on it.
    operator xclDeviceHandle() const;

    explicit operator bool() const { return m_handle != nullptr; }
    const std::shared_ptr<device_impl>& get_handle() const { return m_handle; }

private:
    std::string get_info_string(info::device param) const;
    std::shared_ptr<device_impl> m_handle;
};

} // namespace xrt

#endif
