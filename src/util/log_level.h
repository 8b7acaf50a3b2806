// Whether the lines a user asked for with GGML_XDNA_DEBUG=1 are shown (util/log.h's XDNA_LOG_DEBUG): set where the
// configuration is read (config.cpp), so that the logging needs nothing of the configuration's.
#pragma once

namespace xdna {

bool log_debug_on();
void log_set_debug(bool on);

}  // namespace xdna
