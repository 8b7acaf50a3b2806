// Software XDNA1: xrt::bo (the subset of XRT's xrt/xrt_bo.h the project uses).
// Every buffer has a host copy (what map() returns) and a device copy (what the NPU reads and writes). They meet
// only in sync(): XDNA1 is not cache-coherent, so a missing sync gives stale data here as on the hardware.
#ifndef XDNA_EMU_XRT_BO_H
#define XDNA_EMU_XRT_BO_H

#include "xrt/deprecated/xrt.h"
#include "xrt/detail/xrt_mem.h"
#include "xrt/xrt_device.h"

#include <cstddef>
#include <cstdint>
#include <memory>

typedef uint64_t xrtBufferFlags;
typedef uint32_t xrtMemoryGroup;

namespace xrt {

using memory_group = xrtMemoryGroup;

class bo_impl;

class bo {
public:
    enum class flags : uint32_t {
        normal      = 0,
        cacheable   = XRT_BO_FLAGS_CACHEABLE,
        device_only = XRT_BO_FLAGS_DEV_ONLY,
        host_only   = XRT_BO_FLAGS_HOST_ONLY,
        p2p         = XRT_BO_FLAGS_P2P,
        svm         = XRT_BO_FLAGS_SVM,
        carveout    = XRT_BO_FLAGS_CARVEOUT,
    };

    bo() = default;

    bo(const xrt::device& device, size_t sz, bo::flags flags, memory_group grp);
    bo(const xrt::device& device, size_t sz, memory_group grp) : bo(device, sz, bo::flags::normal, grp) {}

    // The legacy forms that mlir-aie host code reaches through the device's implicit handle conversion.
    bo(xclDeviceHandle dhdl, size_t sz, bo::flags flags, memory_group grp);
    bo(xclDeviceHandle dhdl, size_t sz, xrtBufferFlags flags, memory_group grp)
        : bo(dhdl, sz, static_cast<bo::flags>(flags), grp) {}

    // A sub-buffer: sz bytes at offset of parent, sharing its storage (and, here, its host and device copies).
    bo(const bo& parent, size_t sz, size_t offset);

    size_t size() const;
    uint64_t address() const;
    memory_group get_memory_group() const;
    flags get_flags() const;

    // Copies sz bytes at offset between the host copy and the device copy; throws when out of range.
    void sync(xclBOSyncDirection dir, size_t sz, size_t offset);
    void sync(xclBOSyncDirection dir) { sync(dir, size(), 0); }

    void* map();
    template <typename MapType> MapType map() { return reinterpret_cast<MapType>(map()); }

    void write(const void* src, size_t size, size_t seek);
    void write(const void* src) { write(src, size(), 0); }
    void read(void* dst, size_t size, size_t skip);
    void read(void* dst) { read(dst, size(), 0); }

    bool operator==(const bo& rhs) const { return m_handle == rhs.m_handle; }
    explicit operator bool() const { return m_handle != nullptr; }

    const std::shared_ptr<bo_impl>& get_handle() const { return m_handle; }
    explicit bo(std::shared_ptr<bo_impl> impl) : m_handle(std::move(impl)) {}

private:
    std::shared_ptr<bo_impl> m_handle;
};

} // namespace xrt

#endif
