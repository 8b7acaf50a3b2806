// Names and sizes of the NPU data types, names of the error codes.
#include "npu_error.h"
#include "npu_types.h"

namespace xdna {

const char* npu_dtype_name(npu_dtype t) {
    switch (t) {
        case npu_dtype::bf16: return "bf16";
        case npu_dtype::i8:   return "i8";
        case npu_dtype::f32:  return "f32";
        case npu_dtype::i32:  return "i32";
    }
    return "?";
}

size_t npu_dtype_size(npu_dtype t) {
    switch (t) {
        case npu_dtype::bf16: return 2;
        case npu_dtype::i8:   return 1;
        case npu_dtype::f32:  return 4;
        case npu_dtype::i32:  return 4;
    }
    return 0;
}

bool npu_dtype_parse(const std::string& s, npu_dtype* out) {
    static const npu_dtype all[] = {npu_dtype::bf16, npu_dtype::i8, npu_dtype::f32, npu_dtype::i32};
    for (npu_dtype t : all) {
        if (s == npu_dtype_name(t)) {
            *out = t;
            return true;
        }
    }
    return false;
}

const char* npu_errc_name(npu_errc c) {
    switch (c) {
        case npu_errc::config:     return "config";
        case npu_errc::manifest:   return "manifest";
        case npu_errc::device:     return "device";
        case npu_errc::context:    return "context";
        case npu_errc::kernel:     return "kernel";
        case npu_errc::buffer:     return "buffer";
        case npu_errc::launch:     return "launch";
        case npu_errc::run_failed: return "run_failed";
        case npu_errc::timeout:    return "timeout";
    }
    return "?";
}

} // namespace xdna
