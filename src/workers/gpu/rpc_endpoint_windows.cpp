// rpc_endpoint on Windows: not there yet. Its checks of a ggml-rpc-server (rpc_endpoint.cpp) use POSIX sockets and
// /proc/self/fd to find the connection ggml-rpc holds, which have no port here, and ggml-rpc aborts the process on a
// server that is gone: so GGML_XDNA_GPU=rpc:HOST:PORT is refused on Windows with one line, and the CPU computes.
#include "workers/gpu/rpc_endpoint.h"

namespace xdna {

namespace {
constexpr const char * unsupported = "ggml-xdna on Windows does not check ggml-rpc servers yet, and ggml-rpc would "
                                     "abort the process on one that stops answering: GGML_XDNA_GPU=rpc is not "
                                     "supported on Windows";
}  // namespace

rpc_endpoint::rpc_endpoint(std::string host, std::string port) : host(std::move(host)), port(std::move(port)) {}

bool rpc_endpoint::hello(int, std::string * why) {
    *why = unsupported;
    return false;
}

bool rpc_endpoint::alive(int, std::string * why) {
    *why = unsupported;
    return false;
}

}  // namespace xdna
