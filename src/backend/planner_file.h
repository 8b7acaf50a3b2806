// The planner state file (GGML_XDNA_PLANNER_STATE): what the auto split learned, kept between processes, like FFTW's
// wisdom. The file's second line names what the measurements depend on (the machine, the plugin build, the NPU and
// its kernels, the emulator's settings, the GPU worker, the CPU worker's threads); a file written under another one
// is not read, and the next write replaces it. Nothing in it can make a result wrong (the planner only splits rows),
// and what it says is measured again like everything the planner learned (docs/planner.md).
#pragma once

#include "planner/planner.h"

#include <string>

namespace xdna {

struct device_state;

// The identity line of this process's measurements, for `threads` CPU worker threads.
std::string planner_file_identity(const device_state & st, int threads);

// The file GGML_XDNA_PLANNER_STATE names: itself, or for `auto` one per identity under the cache folder,
// $XDG_CACHE_HOME (else ~/.cache) /ggml-xdna/planner/<hash of the identity>.txt, its folders created. Empty when
// there is none to be had (one log line says why).
std::string planner_file_path(const std::string & setting, const std::string & identity);

// Reads `path` into `planner` if it was written under `identity`; one log line says what happened.
void planner_file_read(split_planner & planner, const std::string & path, const std::string & identity);

// Writes what `planner` learned to `path` (through a temporary file of this process, renamed: a reader never sees
// half of it, and of two processes ending at once the last one's file stays whole).
void planner_file_write(const split_planner & planner, const std::string & path, const std::string & identity);

}  // namespace xdna
