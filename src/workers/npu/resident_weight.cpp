#include "workers/npu/resident_weight.h"

#include <algorithm>
#include <cstring>

namespace xdna::npu {

npu_buffer * resident_weight::block(int64_t row, int64_t n, int64_t panel) {
    const size_t first = (size_t(panel) * rows + row) * kb * elem, bytes = size_t(n) * kb * elem;
    if (row < 0 || panel < 0 || panel >= panels || first + bytes > buf.size()) return nullptr;
    std::lock_guard<std::mutex> lock(mu);
    auto it = views.find({ int64_t(first), int64_t(bytes) });
    if (it == views.end()) it = views.emplace(std::make_pair(int64_t(first), int64_t(bytes)), buf.view(first, bytes)).first;
    return &it->second;
}

bool resident_weight::store_rows(int64_t r0, int64_t n, const uint8_t * src, int64_t ld, std::string * why) {
    const size_t row_bytes = size_t(kb) * elem;
    for (int64_t p = 0; p < panels; ++p) {
        uint8_t * dst = static_cast<uint8_t *>(buf.data()) + (size_t(p) * rows + r0) * row_bytes;
        if (dst == src) continue;   // written in place
        for (int64_t r = 0; r < n; ++r) memcpy(dst + size_t(r) * row_bytes, src + (size_t(r) * ld + p * kb) * elem, row_bytes);
    }
    try {
        for (int64_t p = 0; p < panels; ++p) buf.sync_to_device(size_t(n) * row_bytes, (size_t(p) * rows + r0) * row_bytes);
    } catch (const std::exception & e) {
        if (why) *why = e.what();
        return false;
    }
    return true;
}

std::shared_ptr<resident_weight> alloc_resident(npu_runtime & rt, const npu_kernel & k, int64_t kb, int64_t rows,
                                                int64_t panels, size_t elem, int64_t tail_rows, std::string * why) {
    if (kb <= 0 || rows <= 0 || panels <= 0) {
        if (why) *why = "a weight without rows or K blocks";
        return nullptr;
    }
    auto r = std::make_shared<resident_weight>();
    r->rows   = rows;
    r->kb     = kb;
    r->panels = panels;
    r->elem   = elem;
    const size_t bytes = size_t(rows) * panels * kb * elem;
    try {
        r->buf = rt.alloc(k, npu_arg::b, bytes + size_t(std::max<int64_t>(tail_rows, 0)) * kb * elem);
        if (r->buf.size() > bytes) {
            memset(r->buf.as<uint8_t>() + bytes, 0, r->buf.size() - bytes);
            r->buf.sync_to_device(r->buf.size() - bytes, bytes);
        }
    } catch (const std::exception & e) {
        if (why) *why = e.what();
        return nullptr;
    }
    return r;
}

}  // namespace xdna::npu
