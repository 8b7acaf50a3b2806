#include "workers/worker.h"

namespace xdna {

const char * worker_kind_name(worker_kind kind) {
    switch (kind) {
        case worker_kind::npu: return "npu";
        case worker_kind::gpu: return "gpu";
        case worker_kind::cpu: return "cpu";
    }
    return "?";
}

}  // namespace xdna
