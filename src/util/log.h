// Logging through ggml's log callback (so llama.cpp's own log settings apply), every line prefixed "ggml-xdna: ".
#pragma once

#include "ggml-impl.h"

#define XDNA_LOG_INFO(fmt, ...)  GGML_LOG_INFO("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_WARN(fmt, ...)  GGML_LOG_WARN("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
#define XDNA_LOG_ERROR(fmt, ...) GGML_LOG_ERROR("ggml-xdna: " fmt "\n", ##__VA_ARGS__)
// Debug lines are shown only with GGML_XDNA_DEBUG=1, at info level so llama.cpp prints them without -v.
#define XDNA_LOG_DEBUG(fmt, ...) do { if (::xdna::get_config().debug) GGML_LOG_INFO("ggml-xdna: " fmt "\n", ##__VA_ARGS__); } while (0)

#include "config/config.h"
