// The one error type of the NPU runtime: everything XRT throws or reports (exceptions, error states, timeouts)
// and every bad manifest or argument becomes an npu_error with a readable one-line message.
#pragma once

#include <stdexcept>
#include <string>

namespace xdna {

enum class npu_errc {
    config,      // bad options
    manifest,    // the kernel manifest or a file it names
    device,      // opening the NPU
    context,     // no hardware context could be had
    kernel,      // an xclbin or its kernel could not be loaded
    buffer,      // allocation, sync, or a buffer that does not fit a launch
    launch,      // XRT refused to start a run
    run_failed,  // a run ended in an error state
    timeout,     // a run did not finish in time (its context was dropped; the driver's watchdog ends it)
};

const char* npu_errc_name(npu_errc c);

class npu_error : public std::runtime_error {
public:
    npu_error(npu_errc code, const std::string& what) : std::runtime_error(what), m_code(code) {}
    npu_errc code() const { return m_code; }

private:
    npu_errc m_code;
};

} // namespace xdna
