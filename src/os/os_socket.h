// The socket address types (sockaddr_storage and the rest) of the OS: the one header of the plugin that differs by
// OS, for the declarations that need them (workers/gpu/rpc_endpoint.h).
#pragma once

#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#else
#include <sys/socket.h>
#endif
