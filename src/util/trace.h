// The plugin's timeline: with GGML_XDNA_TRACE=file.json every multiply, every worker's part of it, the NPU worker's
// host phases and the NPU's own busy time are written in the Chrome trace-event format (opens in Perfetto and
// chrome://tracing; tools/bench/trace_chart.py draws one layer of it as a PNG).
//
// Each thread that records gets a lane of its own (named by name_thread); the NPU's busy time has a lane of its own
// too (the emulator's modelled runs, or launch to completion on hardware). Off, a record costs one relaxed load.
// Events are kept in memory and written by close(), or at process exit.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace xdna::trace {

namespace detail {
extern std::atomic<bool> enabled;
}

// Starts recording into `path` (empty: nothing). Called once, where the configuration is read.
void open(const std::string & path);
// Writes the file and stops recording (again at exit if events were recorded after it).
void close();

inline bool on() { return detail::enabled.load(std::memory_order_relaxed); }

// Names the calling thread's lane.
void name_thread(const char * name);

// One event [t0, t1] (now_seconds() clock) on the calling thread's lane. `name` must outlive the trace (a literal);
// `detail` is copied. `value` >= 0 is shown as the event's argument `n` (rows, tokens, bytes).
void add(const char * name, double t0, double t1, int64_t value = -1, const std::string & detail = {});

// One event on the NPU device's lane: the NPU busy with a run.
void add_device(const char * name, double t0, double t1);

// The span of a scope on the calling thread's lane.
class scope {
  public:
    explicit scope(const char * name, int64_t value = -1);
    ~scope();
    scope(const scope &) = delete;
    scope & operator=(const scope &) = delete;

  private:
    const char * name;
    int64_t      value;
    double       t0;
};

}  // namespace xdna::trace
