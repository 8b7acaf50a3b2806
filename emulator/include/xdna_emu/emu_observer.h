// An extension of the software XDNA1 beyond XRT's API, for timelines: the modelled time of each run the device
// executes (when it starts on the array and when it finishes), in seconds of std::chrono::steady_clock.
// On hardware the same span is only seen from the host, from launch to the completed wait.
#pragma once

namespace xdna_emu {

using run_observer = void (*)(double start_s, double end_s);

// Called from the device's executor thread for every run it completes; nullptr: none (the default).
void set_run_observer(run_observer fn);

} // namespace xdna_emu
