// A ggml-rpc-server endpoint (GGML_XDNA_GPU=rpc:HOST:PORT), checked before ggml-rpc is given it and while the GPU
// worker uses it. ggml-rpc aborts the whole process when a server is not there or stops answering
// (GGML_ABORT/RPC_STATUS_ASSERT in ggml-rpc.cpp), and waits without a limit for a reply, so the plugin asks first:
// - before adding the server, the server's own hello (the first message of ggml-rpc's protocol: command 14, answered
//   with the protocol version) on a connection of its own, under a short timeout;
// - before each run of the GPU worker, whether the connection ggml-rpc holds to it is still open (a peek that never
//   waits: a server that exited has closed it), or, where ggml-rpc holds none yet, whether the server still answers
//   its hello.
// A server that dies while a run is in flight still takes the process down inside ggml-rpc: nothing outside it can
// catch that (docs/gpu-worker.md).
#pragma once

#include "os/os_socket.h"

#include <string>
#include <vector>

namespace xdna {

class rpc_endpoint {
  public:
    // `host`, `port`: as in GGML_XDNA_GPU=rpc:HOST:PORT.
    rpc_endpoint(std::string host, std::string port);

    // The server's hello within `timeout_ms`, on a connection of its own. False with `why` (one sentence) when
    // nothing listens there, nothing answers in time (not a ggml-rpc-server, or one that serves another client: it
    // serves one at a time), the answer is not ggml-rpc's, or its protocol's major version is not this ggml's.
    bool hello(int timeout_ms, std::string * why);

    // Whether the server is still there, without waiting on it: the connection ggml-rpc holds to it is open, or,
    // where there is none, its hello answers within `timeout_ms`. False with `why` otherwise.
    bool alive(int timeout_ms, std::string * why);

  private:
    int held_connection();              // the socket of this process connected to the endpoint, or -1
    bool connected_here(int fd) const;  // whether `fd` is a socket connected to the endpoint

    std::string host, port;
    std::vector<sockaddr_storage> addresses;   // the endpoint's, as resolved by hello()
    int last_fd = -1;                          // the connection held_connection() found last
};

}  // namespace xdna
