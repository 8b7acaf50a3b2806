// One worker on rows of a node, described as the engine describes a multiply (the planner's default experts for the
// CPU: none, every expert stays with the worker), for the tests that drive a worker without the engine.
#pragma once

#include "workers/worker.h"

inline xdna::work_record run_worker(xdna::worker & w, const ggml_tensor * node, xdna::row_range rows) {
    xdna::multiply m = xdna::describe_multiply(node);
    if (!w.accepts(m) || !w.describe(m)) {
        return xdna::work_record::failed(xdna::work_failure::unsupported, "the worker does not take this multiply");
    }
    w.begin(m, rows);
    return w.end();
}
