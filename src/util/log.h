// Logging through ggml's log callback (so llama.cpp's own log settings apply), every line prefixed "ggml-xdna: ".
//
// llama.cpp's tools show ggml's INFO lines only with -v, so what a user asked for (GGML_XDNA_DEBUG=1) and the
// end-of-run summary of what each worker did are logged at ggml's plain output level, which they always show.
#pragma once

#include "ggml-impl.h"

#include "config/config.h"

#define XDNA_LOG_INFO(fmt, ...)    GGML_LOG_INFO("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_WARN(fmt, ...)    GGML_LOG_WARN("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_ERROR(fmt, ...)   GGML_LOG_ERROR("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_SUMMARY(fmt, ...) GGML_LOG("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_DEBUG(fmt, ...) \
    do { if (::xdna::get_config().debug) GGML_LOG("ggml-xdna: " fmt "\n", ##__VA_ARGS__); } while (0)
