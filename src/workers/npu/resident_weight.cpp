#include "workers/npu/resident_weight.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace xdna::npu {

npu_buffer * resident_weight::block(int64_t row, int64_t n, int64_t panel) {
    const size_t first = (size_t(panel) * rows + row) * kb * elem, bytes = size_t(n) * kb * elem;
    if (row < 0 || panel < 0 || panel >= panels || first + bytes > buf.size()) return nullptr;
    std::lock_guard<std::mutex> lock(mu);
    auto it = views.find({ int64_t(first), int64_t(bytes) });
    if (it == views.end()) it = views.emplace(std::make_pair(int64_t(first), int64_t(bytes)), buf.view(first, bytes)).first;
    return &it->second;
}

bool make_resident(npu_runtime & rt, const npu_kernel & k, int64_t kb, int64_t tail_rows, converted_weight & cw,
                   std::string * why) {
    if (kb <= 0 || cw.ld % kb != 0 || cw.rows <= 0) {
        if (why) *why = "the weight's row length is not a whole number of K blocks";
        return false;
    }
    auto r = std::make_shared<resident_weight>();
    r->rows   = cw.rows;
    r->kb     = kb;
    r->panels = cw.ld / kb;
    r->elem   = cw.format == weight_format::bf16 ? 2 : 1;
    const size_t bytes = size_t(cw.rows) * cw.ld * r->elem;
    try {
        r->buf = rt.alloc(k, npu_arg::b, bytes + size_t(std::max<int64_t>(tail_rows, 0)) * kb * r->elem);
    } catch (const std::exception & e) {
        if (why) *why = e.what();
        return false;
    }
    const uint8_t * src = cw.format == weight_format::bf16 ? (const uint8_t *) cw.bf16.data() : (const uint8_t *) cw.i8.data();
    uint8_t * dst = r->buf.as<uint8_t>();
    const size_t row_bytes = size_t(kb) * r->elem;
    memset(dst + bytes, 0, r->buf.size() - bytes);
    if (r->panels == 1) {
        memcpy(dst, src, bytes);
    } else {
        for (int64_t p = 0; p < r->panels; ++p) {
            for (int64_t row = 0; row < cw.rows; ++row) {
                memcpy(dst + (size_t(p) * cw.rows + row) * row_bytes, src + (size_t(row) * cw.ld + p * kb) * r->elem,
                       row_bytes);
            }
        }
    }
    try {
        r->buf.sync_to_device();
    } catch (const std::exception & e) {
        if (why) *why = e.what();
        return false;
    }
    // the buffer's host copy is now the weight: the row-major one goes
    std::vector<uint16_t>().swap(cw.bf16);
    std::vector<int8_t>().swap(cw.i8);
    cw.resident = std::move(r);
    return true;
}

}  // namespace xdna::npu
