// The software XDNA1's own settings, read from XDNA_EMU_* environment variables when a device is opened.
// They describe the emulated machine (mode, modelled speed, context limit, other processes, injected faults);
// the runtime that drives the device never reads them. docs/emulator.md lists them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "xdna1_timing.h"

namespace xdna_emu {

enum class mode { exact, timed, null };
enum class fault { none, error, timeout, nan, bf16, wrong };
// How a bf16 (or bf16 x i8) run's groups of 8 products are added to the fp32 accumulator (emu_matmul.h).
enum class accum { exact, aligned };
// Which amdxdna driver ends a hung job, and how (docs/emulator.md, "The driver's watchdog").
enum class driver { intree, outoftree };

struct config {
    enum mode mode = mode::exact;
    // Timing (docs/emulator.md, "The timing model"): the silicon model of src/npu/xdna1_timing.h at the power mode's
    // clock, its dispatch and design-switch figures; a flat rate only where one is asked for (a what-if)
    double dispatch_us;             // an idle NPU's launch
    double queued_us;               // between back-to-back queued launches
    double switch_us;               // a run on another design than the run before it (the array reconfigured)
    double clock_hz;                // the AIE clock of the power mode
    std::string power_mode = "default";
    double bf16_gflops = 0.0;       // > 0: bf16 runs at this flat rate instead of the model
    double int8_gops = 0.0;         // > 0: int8 runs at this flat rate instead of the model
    int threads = 1;                // threads the arithmetic may use
    int hwctx_limit = 6;            // npu1 driver limit, system-wide
    int other_contexts = 0;         // contexts held by other processes
    size_t heap_bytes = 64u << 20;  // instruction (device) heap per process
    size_t memlock_bytes = SIZE_MAX; // data buffers the process may pin (RLIMIT_MEMLOCK; the driver counts them)
    enum fault fault = fault::none;
    uint64_t fault_after = 0;       // runs that succeed before the first faulty one
    uint64_t fault_count = 1;       // faulty runs in a row (0: all from then on)
    int hang_ms = 0;                // a "timeout" run completes by itself after this long (0: never)
    enum driver driver = driver::intree;
    int job_timeout_ms = 60000;     // in-tree: a job still running after this long ends in TIMEOUT (HWCTX_MAX_TIMEOUT)
    int tdr_ms = 2000;              // out-of-tree: the TDR's period (timeout_in_sec, 2 s; 0: no TDR)
    enum accum accum = accum::exact;
    int log_level = 1;              // 0 errors, 1 warnings and the device banner, 2 every run
    bool check_sync = true;         // warn when a run reads bytes whose host copy was never synced

    config();
    // The timing its runs are charged by: the silicon model at clock_hz, or the flat rates where set.
    xdna::xdna1_device_timing timing() const;
    // Reads the environment; an unparsable value is reported on stderr and the default kept.
    static config from_env();
    std::string describe() const;
};

const char* mode_name(enum mode m);
const char* fault_name(enum fault f);
const char* accum_name(enum accum a);
const char* driver_name(enum driver d);

// Emulator log lines all start with "[xdna-emu]" so that nobody mistakes them for the hardware's.
void log(int level, int threshold, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

} // namespace xdna_emu
