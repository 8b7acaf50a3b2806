// The published XDNA1 GEMM measurements (data/xdna1-gemm-points.json) beside the timing model's value for each: what
// `xdna-npu-model table` prints into docs/emulator.md and what the model's test checks, from the same code.
#pragma once

#include "xdna1_timing.h"

#include <string>
#include <vector>

namespace xdna {

struct xdna1_point {
    xdna1_tile  tile;
    xdna1_block block;
    std::string types;                  // "bf16" or "i8" (inputs)
    std::string c;                      // the output type's name
    double      lo = 0.0, hi = 0.0;     // the published GFLOP/s (GOP/s), or the published range
    std::string source, assumed;
};

// Reads the points; throws std::runtime_error naming the file and the entry at fault.
std::vector<xdna1_point> xdna1_load_points(const std::string & path);

// The model's GFLOP/s for a point: one dispatch and the run, as the published figures were timed.
double xdna1_point_model(const xdna1_point & p);
// How far the model is outside the published value or range: 0 inside, else model / nearest - 1.
double xdna1_point_error(const xdna1_point & p);

// The Markdown table of every point, its source and the model beside it.
std::string xdna1_points_table(const std::vector<xdna1_point> & points);

}  // namespace xdna
