// Options of xdna-microbench besides Google Benchmark's own (main.cpp reads them).
#pragma once

#include <string>

namespace xdna_microbench {

struct options {
    int         threads = 1;    // --threads=N: CPU threads of both backends (1: the steadiest on a shared machine)
    std::string plugin;         // --plugin=PATH: libggml-xdna.so (default: next to this program)
};

options & opts();

}  // namespace xdna_microbench
