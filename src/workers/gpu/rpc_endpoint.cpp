#include "workers/gpu/rpc_endpoint.h"

#include "ggml-rpc.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

namespace xdna {

namespace {

// The hello of ggml-rpc's wire format (ggml-rpc.cpp, rpc_serve_client): command byte 14, the request's size as a
// 64-bit integer, the request; the answer is its size as a 64-bit integer, then the version (major, minor, patch
// bytes first). In protocol 7 the request is the client's 24 bytes of transport capabilities (all zero: plain TCP,
// nothing to negotiate), in earlier ones empty. The server closes a connection whose hello has another size, so a
// server that closes it is asked again with the other size: a server of this protocol answers one of the two.
constexpr uint8_t hello_command = 14;
constexpr uint64_t hello_request_bytes = RPC_PROTO_MAJOR_VERSION >= 7 ? 24 : 0;
constexpr uint64_t hello_other_request_bytes = hello_request_bytes == 0 ? 24 : 0;
constexpr uint64_t hello_answer_max = 256;
constexpr const char * closed_at_hello = "it closed the connection at ggml-rpc's hello (not a ggml-rpc-server)";

using clock_type = std::chrono::steady_clock;

int ms_left(clock_type::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    return left > 0 ? (int) left : 0;
}

// Waits for `events` on `fd` until `deadline`; false on a timeout or an error.
bool wait_for(int fd, short events, clock_type::time_point deadline) {
    pollfd pfd = { fd, events, 0 };
    for (;;) {
        const int n = poll(&pfd, 1, ms_left(deadline));
        if (n < 0 && errno == EINTR) continue;
        return n == 1 && (pfd.revents & events);
    }
}

bool send_all(int fd, const uint8_t * data, size_t size, clock_type::time_point deadline) {
    for (size_t done = 0; done < size;) {
        if (!wait_for(fd, POLLOUT, deadline)) return false;
        const ssize_t n = send(fd, data + done, size - done, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) return false;
        done += (size_t) n;
    }
    return true;
}

// 0: all read; 1: the deadline passed; 2: the connection closed or failed.
int recv_all(int fd, uint8_t * data, size_t size, clock_type::time_point deadline) {
    for (size_t done = 0; done < size;) {
        if (!wait_for(fd, POLLIN, deadline)) return 1;
        const ssize_t n = recv(fd, data + done, size - done, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) return 2;
        done += (size_t) n;
    }
    return 0;
}

// A non-blocking connection to `a` by `deadline`; -1 with `err` (an errno, ETIMEDOUT on the deadline).
int connect_by(const addrinfo * a, clock_type::time_point deadline, int * err) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
    *err = errno;
    if (*err == EINPROGRESS) {
        socklen_t len = sizeof(*err);
        if (!wait_for(fd, POLLOUT, deadline)) {
            *err = ETIMEDOUT;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, err, &len) == 0 && *err == 0) {
            return fd;
        }
    }
    close(fd);
    return -1;
}

// The hello with a request of `request_bytes` on the connected `fd`; empty when the server answered as a
// ggml-rpc-server of this protocol.
std::string exchange_hello(int fd, uint64_t request_bytes, clock_type::time_point deadline, int timeout_ms) {
    uint8_t request[1 + 8 + 24] = {};
    request[0] = hello_command;
    memcpy(request + 1, &request_bytes, 8);   // little-endian on every host ggml-rpc runs on, as it writes it
    if (!send_all(fd, request, 1 + 8 + request_bytes, deadline)) return "the connection failed at the hello";
    uint64_t answer_bytes = 0;
    const int got = recv_all(fd, (uint8_t *) &answer_bytes, 8, deadline);
    if (got == 1) {
        return "it accepts connections but did not answer ggml-rpc's hello within " + std::to_string(timeout_ms) +
               " ms (not a ggml-rpc-server, or one that serves another client: it serves one at a time)";
    }
    if (got == 2) return closed_at_hello;
    if (answer_bytes < 3 || answer_bytes > hello_answer_max) return "its answer to ggml-rpc's hello is not ggml-rpc's";
    uint8_t answer[hello_answer_max];
    if (recv_all(fd, answer, answer_bytes, deadline) != 0) return "its answer to ggml-rpc's hello was cut short";
    if (answer[0] != RPC_PROTO_MAJOR_VERSION) {
        return "it speaks ggml-rpc protocol " + std::to_string(answer[0]) + "." + std::to_string(answer[1]) +
               ", this ggml " + std::to_string(RPC_PROTO_MAJOR_VERSION) + "." + std::to_string(RPC_PROTO_MINOR_VERSION);
    }
    return "";
}

bool same_address(const sockaddr_storage & a, const sockaddr_storage & b) {
    if (a.ss_family != b.ss_family) return false;
    if (a.ss_family == AF_INET) {
        const auto & x = (const sockaddr_in &) a, & y = (const sockaddr_in &) b;
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    if (a.ss_family == AF_INET6) {
        const auto & x = (const sockaddr_in6 &) a, & y = (const sockaddr_in6 &) b;
        return x.sin6_port == y.sin6_port && memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
    }
    return false;
}

}  // namespace

rpc_endpoint::rpc_endpoint(std::string host, std::string port) : host(std::move(host)), port(std::move(port)) {}

bool rpc_endpoint::hello(int timeout_ms, std::string * why) {
    addrinfo hints = {};
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo * res = nullptr;
    if (const int e = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); e != 0) {
        *why = std::string("cannot resolve the host: ") + gai_strerror(e);
        return false;
    }
    const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
    addresses.clear();
    std::string fail = "no RPC server listens there";
    bool ok = false;
    for (const addrinfo * a = res; a && !ok; a = a->ai_next) {
        sockaddr_storage s = {};
        memcpy(&s, a->ai_addr, a->ai_addrlen);
        addresses.push_back(s);
        for (const uint64_t request_bytes : { hello_request_bytes, hello_other_request_bytes }) {
            int err = 0;
            const int fd = connect_by(a, deadline, &err);
            if (fd < 0) {
                if (err == ETIMEDOUT) fail = "no connection within " + std::to_string(timeout_ms) + " ms";
                break;
            }
            fail = exchange_hello(fd, request_bytes, deadline, timeout_ms);
            close(fd);
            if (fail != closed_at_hello) break;
        }
        ok = fail.empty();
    }
    freeaddrinfo(res);
    if (!ok) *why = fail;
    return ok;
}

bool rpc_endpoint::connected_here(int fd) const {
    struct stat sb;
    sockaddr_storage peer = {};
    socklen_t len = sizeof(peer);
    if (fstat(fd, &sb) != 0 || !S_ISSOCK(sb.st_mode)) return false;
    if (getpeername(fd, (sockaddr *) &peer, &len) != 0) return false;
    for (const sockaddr_storage & a : addresses) {
        if (same_address(peer, a)) return true;
    }
    return false;
}

int rpc_endpoint::held_connection() {
    if (last_fd >= 0 && connected_here(last_fd)) return last_fd;   // two system calls, not a walk of every descriptor
    last_fd = -1;
    DIR * d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (dirent * e = readdir(d)) {
        char * end = nullptr;
        const long fd = strtol(e->d_name, &end, 10);
        if (*end != '\0' || fd == dirfd(d)) continue;
        if (connected_here((int) fd)) {
            last_fd = (int) fd;
            break;
        }
    }
    closedir(d);
    return last_fd;
}

bool rpc_endpoint::alive(int timeout_ms, std::string * why) {
    const int fd = held_connection();
    if (fd < 0) return hello(timeout_ms, why);
    // between runs nothing is owed on ggml-rpc's connection: readable means closed (0) or reset (an error)
    uint8_t b;
    const ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (n > 0) {
        *why = "it sent what nobody asked for";
        return false;
    }
    *why = n == 0 ? std::string("it closed ggml-rpc's connection (the server exited)")
                  : std::string("ggml-rpc's connection failed: ") + strerror(errno);
    return false;
}

}  // namespace xdna
