// xrt::bo of the software XDNA1: a host copy and a device copy that meet only in sync().
#include "emu_impl.h"

#include "os/os.h"

#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>

namespace xrt {

namespace {

constexpr size_t page = 4096;
constexpr size_t heap_align = 32 * 1024;   // device-heap buffers are aligned to 32 KiB (dev_mem_buf_shift 15)

unsigned char* alloc_pages(size_t size) {
    const size_t rounded = (size + page - 1) / page * page;
    // fresh buffers read as zero, as freshly allocated driver pages do
    void* p = xdna::os::aligned_alloc_zeroed(page, rounded);
    if (!p) throw std::bad_alloc();
    return static_cast<unsigned char*>(p);
}

std::shared_ptr<device_impl> device_from_handle(xclDeviceHandle dhdl) {
    if (!dhdl) throw xrt_error(EINVAL, "bo: null device handle");
    return static_cast<device_impl*>(dhdl)->shared_from_this();
}

} // namespace

bo_impl::bo_impl(std::shared_ptr<device_impl> d, size_t sz, uint32_t fl, memory_group g)
    : dev(std::move(d)), size(sz), flags(fl), grp(g) {
    if (size == 0) {
        throw xrt_error(EINVAL, "bo: size 0 buffers are not supported");
    }
    if (flags & XCL_BO_FLAGS_CACHEABLE) {
        // Instruction buffers come from the per-process device heap (64 MiB on npu1), 32 KiB at a time.
        heap_bytes = (size + heap_align - 1) / heap_align * heap_align;
        xdna_emu::npu::get().heap_alloc(heap_bytes, dev->cfg);
    } else {
        pinned_bytes = (size + page - 1) / page * page;
        xdna_emu::npu::get().pin(pinned_bytes, dev->cfg);
    }
    try {
        host = alloc_pages(size);
        device = alloc_pages(size);
    } catch (...) {
        xdna::os::aligned_free(host);
        if (heap_bytes) xdna_emu::npu::get().heap_free(heap_bytes);
        if (pinned_bytes) xdna_emu::npu::get().unpin(pinned_bytes);
        throw;
    }
    address = xdna_emu::npu::get().next_buffer(size, &id);
}

bo_impl::bo_impl(std::shared_ptr<bo_impl> par, size_t sz, size_t off)
    : dev(par->dev), size(sz), flags(par->flags), grp(par->grp), parent(std::move(par)), offset(off) {
    if (size == 0) {
        throw xrt_error(EINVAL, "bo: size 0 sub-buffers are not supported");
    }
    if (offset > parent->size || size > parent->size - offset) {
        throw xrt_error(EINVAL, "bo: a sub-buffer of " + std::to_string(size) + " bytes at offset " +
                                    std::to_string(offset) + " exceeds its parent's " + std::to_string(parent->size));
    }
    if (parent->flags & XCL_BO_FLAGS_CACHEABLE) {
        throw xrt_error(EINVAL, "bo: sub-buffers of instruction (cacheable) buffers are not supported here");
    }
    host = parent->host + offset;
    device = parent->device + offset;
    address = parent->address + offset;
    id = xdna_emu::npu::get().next_id();
}

bo_impl::~bo_impl() {
    if (parent) return;   // the parent owns the storage
    xdna::os::aligned_free(host);
    xdna::os::aligned_free(device);
    if (heap_bytes) {
        xdna_emu::npu::get().heap_free(heap_bytes);
    }
    if (pinned_bytes) {
        xdna_emu::npu::get().unpin(pinned_bytes);
    }
}

bo::bo(const xrt::device& device, size_t sz, bo::flags fl, memory_group grp) {
    if (!device) throw xrt_error(EINVAL, "bo: empty device");
    m_handle = std::make_shared<bo_impl>(device.get_handle(), sz, static_cast<uint32_t>(fl), grp);
}

bo::bo(const bo& parent, size_t sz, size_t offset) {
    if (!parent) throw xrt_error(EINVAL, "bo: sub-buffer of an empty buffer");
    // a sub-buffer of a sub-buffer refers to the root's storage
    const std::shared_ptr<bo_impl>& p = parent.m_handle;
    m_handle = p->parent ? std::make_shared<bo_impl>(p->parent, sz, p->offset + offset)
                         : std::make_shared<bo_impl>(p, sz, offset);
}

bo::bo(xclDeviceHandle dhdl, size_t sz, bo::flags fl, memory_group grp)
    : m_handle(std::make_shared<bo_impl>(device_from_handle(dhdl), sz, static_cast<uint32_t>(fl), grp)) {}

size_t bo::size() const {
    return m_handle ? m_handle->size : 0;
}

uint64_t bo::address() const {
    return m_handle ? m_handle->address : 0;
}

memory_group bo::get_memory_group() const {
    return m_handle ? m_handle->grp : 0;
}

bo::flags bo::get_flags() const {
    return static_cast<bo::flags>(m_handle ? m_handle->flags & ~XRT_BO_FLAGS_MEMIDX_MASK : 0);
}

void bo::sync(xclBOSyncDirection dir, size_t sz, size_t offset) {
    if (!m_handle) throw xrt_error(EINVAL, "bo::sync on an empty buffer");
    bo_impl& b = *m_handle;
    if (offset > b.size || sz > b.size - offset) {
        throw xrt_error(EINVAL, "bo::sync: " + std::to_string(sz) + " bytes at offset " + std::to_string(offset) +
                                    " exceed the buffer's " + std::to_string(b.size));
    }
    switch (dir) {
        case XCL_BO_SYNC_BO_TO_DEVICE:   std::memcpy(b.device + offset, b.host + offset, sz); break;
        case XCL_BO_SYNC_BO_FROM_DEVICE: std::memcpy(b.host + offset, b.device + offset, sz); break;
        default: throw xrt_error(ENOTSUP, "bo::sync: only XCL_BO_SYNC_BO_TO_DEVICE and _FROM_DEVICE exist on an NPU");
    }
}

void* bo::map() {
    if (!m_handle) throw xrt_error(EINVAL, "bo::map on an empty buffer");
    if (m_handle->flags & XCL_BO_FLAGS_DEV_ONLY) throw xrt_error(EINVAL, "bo::map: device-only buffer has no host copy");
    return m_handle->host;
}

void bo::write(const void* src, size_t sz, size_t seek) {
    if (!m_handle) throw xrt_error(EINVAL, "bo::write on an empty buffer");
    if (seek > m_handle->size || sz > m_handle->size - seek) throw xrt_error(EINVAL, "bo::write: out of range");
    std::memcpy(m_handle->host + seek, src, sz);
}

void bo::read(void* dst, size_t sz, size_t skip) {
    if (!m_handle) throw xrt_error(EINVAL, "bo::read on an empty buffer");
    if (skip > m_handle->size || sz > m_handle->size - skip) throw xrt_error(EINVAL, "bo::read: out of range");
    std::memcpy(dst, m_handle->host + skip, sz);
}

} // namespace xrt
