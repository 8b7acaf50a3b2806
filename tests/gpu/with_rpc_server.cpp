// Runs a command with a ggml-rpc-server on loopback as its GPU: starts the server on a free port, waits until it
// listens, runs the command with XDNA_TEST_GPU=rpc:127.0.0.1:PORT, stops the server and returns the command's status.
// The server dies with this process whatever happens (it is never left behind).
// usage: xdna-with-rpc-server <ggml-rpc-server> [--threads N] -- <command> [args...]
#include "rpc_server.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char ** argv) {
    int sep = 1;
    while (sep < argc && strcmp(argv[sep], "--") != 0) ++sep;
    if (argc < 4 || sep >= argc - 1) {
        fprintf(stderr, "usage: %s <ggml-rpc-server> [--threads N] -- <command> [args...]\n", argv[0]);
        return 2;
    }
    int threads = 1;
    if (sep == 4 && strcmp(argv[2], "--threads") == 0) threads = atoi(argv[3]);
    xdna_test::rpc_server server(argv[1], threads);
    if (!server.ok()) {
        fprintf(stderr, "xdna-with-rpc-server: %s did not start listening on loopback\n", argv[1]);
        return 1;
    }
    const std::string setting = "rpc:" + server.endpoint();
    setenv("XDNA_TEST_GPU", setting.c_str(), 1);
    fprintf(stderr, "xdna-with-rpc-server: ggml-rpc-server listening on %s\n", server.endpoint().c_str());

    const pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[sep + 1], argv + sep + 1);
        fprintf(stderr, "xdna-with-rpc-server: cannot run %s\n", argv[sep + 1]);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
