// Logging through ggml's log callback (so llama.cpp's own log settings apply), every line prefixed "ggml-xdna: ".
//
// llama.cpp's tools show ggml's INFO lines only with -v, so what a user asked for (GGML_XDNA_DEBUG=1) and the
// end-of-run summary of what each worker did are logged at WARN level: shown by every tool, on stderr, never mixed
// into the generated text on stdout (ggml's plain output level would go there).
#pragma once

#include "ggml-impl.h"

#include "util/log_level.h"

#define XDNA_LOG_INFO(fmt, ...)    GGML_LOG_INFO("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_WARN(fmt, ...)    GGML_LOG_WARN("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_ERROR(fmt, ...)   GGML_LOG_ERROR("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_SUMMARY(fmt, ...) GGML_LOG_WARN("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_DEBUG(fmt, ...) \
    do { if (::xdna::log_debug_on()) GGML_LOG_WARN("ggml-xdna: " fmt "\n", ##__VA_ARGS__); } while (0)
