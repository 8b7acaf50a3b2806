// A ggml-rpc-server on loopback, started for a test process and stopped with it: the stand-in GPU where there is
// none. One server per process (the server serves one client at a time), on a free port, serving its CPU device.
#pragma once

#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace xdna_test {

class rpc_server {
  public:
    // Starts `server_bin` and waits (up to `wait_s`) until it accepts connections. ok() says whether it did.
    explicit rpc_server(const std::string & server_bin, int threads = 1, double wait_s = 20.0) {
        port = free_port();
        if (port <= 0) return;
        pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);   // never outlive the test, even when it crashes
            unsetenv("GGML_BACKEND_PATH");       // serve the plain CPU device, not a plugin
            const std::string p = std::to_string(port), t = std::to_string(threads);
            if (!getenv("XDNA_TEST_RPC_VERBOSE") && !freopen("/dev/null", "w", stdout)) _exit(126);
            if (!getenv("XDNA_TEST_RPC_VERBOSE") && !freopen("/dev/null", "w", stderr)) _exit(126);
            execl(server_bin.c_str(), server_bin.c_str(), "-H", "127.0.0.1", "-p", p.c_str(), "-t", t.c_str(), "-d",
                  "CPU", (char *) nullptr);
            _exit(127);
        }
        for (double waited = 0; pid > 0 && waited < wait_s; waited += 0.05) {
            if (listening()) { up = true; break; }
            int status = 0;
            if (waitpid(pid, &status, WNOHANG) == pid) { pid = -1; break; }   // it died
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

    ~rpc_server() {
        if (pid > 0) {
            kill(pid, SIGTERM);
            int status = 0;
            waitpid(pid, &status, 0);
        }
    }

    bool ok() const { return up; }
    // Kills the server at once (SIGKILL, as a crash would) and waits until it is gone.
    void kill_now() {
        if (pid <= 0) return;
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        pid = -1;
    }
    std::string endpoint() const { return "127.0.0.1:" + std::to_string(port); }

  private:
    static int free_port() {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a = {};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        socklen_t len = sizeof(a);
        int port = -1;
        if (bind(fd, (sockaddr *) &a, sizeof(a)) == 0 && getsockname(fd, (sockaddr *) &a, &len) == 0) {
            port = ntohs(a.sin_port);
        }
        close(fd);
        return port;
    }

    bool listening() const {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a = {};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((uint16_t) port);
        const bool ok = connect(fd, (sockaddr *) &a, sizeof(a)) == 0;
        close(fd);
        return ok;
    }

    int   port = -1;
    pid_t pid  = -1;
    bool  up   = false;
};

}  // namespace xdna_test
