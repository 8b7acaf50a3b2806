// The software XDNA1's extensions beyond XRT's API: what the emulated device can tell its host that hardware cannot
// (the modelled span of each run, for timelines) or that the host would otherwise have to assume (the timing its runs
// are charged by, so that a what-if device is planned for as it runs).
#pragma once

#include "xdna1_timing.h"

namespace xrt {
class device;
}

namespace xdna_emu {

// The modelled time of each run the device executes (when it starts on the array and when it finishes), in seconds
// of std::chrono::steady_clock. On hardware the same span is only seen from the host, from launch to the completed
// wait.
using run_observer = void (*)(double start_s, double end_s);

// Called from the device's executor thread for every run it completes; nullptr: none (the default).
void set_run_observer(run_observer fn);

// The timing the device's runs are charged by (its XDNA_EMU_* settings: power mode, flat what-if rates, dispatch).
xdna::xdna1_device_timing device_timing(const xrt::device& device);

} // namespace xdna_emu
