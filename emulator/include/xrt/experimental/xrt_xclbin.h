// Software XDNA1: xrt::xclbin (the subset of XRT's xrt/experimental/xrt_xclbin.h the project uses).
// The emulator's xclbin is its own file format (see docs/emulator.md): it names the kernel, its arguments and
// their memory banks, and the block multiply the design computes.
#ifndef XDNA_EMU_XRT_XCLBIN_H
#define XDNA_EMU_XRT_XCLBIN_H

#include "xrt/xrt_uuid.h"

#include <memory>
#include <string>
#include <vector>

namespace xrt {

class xclbin_impl;
class xclbin_kernel_impl;

class xclbin {
public:
    class kernel {
    public:
        kernel() = default;
        explicit kernel(std::shared_ptr<xclbin_kernel_impl> impl) : m_handle(std::move(impl)) {}

        std::string get_name() const;
        size_t get_num_args() const;

        explicit operator bool() const { return m_handle != nullptr; }
        const std::shared_ptr<xclbin_kernel_impl>& get_handle() const { return m_handle; }

    private:
        std::shared_ptr<xclbin_kernel_impl> m_handle;
    };

    xclbin() = default;
    // Reads and checks the file; throws std::runtime_error naming the file when it is missing or malformed.
    explicit xclbin(const std::string& filename);

    std::vector<kernel> get_kernels() const;
    kernel get_kernel(const std::string& name) const;
    uuid get_uuid() const;
    std::string get_xsa_name() const;

    explicit operator bool() const { return m_handle != nullptr; }
    const std::shared_ptr<xclbin_impl>& get_handle() const { return m_handle; }

private:
    std::shared_ptr<xclbin_impl> m_handle;
};

} // namespace xrt

#endif
