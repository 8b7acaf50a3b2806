// Whether llama.cpp puts model layers on its GPU, as the GPU worker's default device choice reads it from the
// process's arguments (llama_layers.h).
#include "workers/gpu/llama_layers.h"

#include <gtest/gtest.h>

using xdna::llama_layers_of;

TEST(llama_layers, zero_layers_leave_the_gpu_to_the_worker) {
    EXPECT_FALSE(llama_layers_of({ "-m", "x.gguf", "-ngl", "0" }, nullptr).on_gpu);
    EXPECT_FALSE(llama_layers_of({ "--n-gpu-layers", "0", "-p", "hi" }, nullptr).on_gpu);
    EXPECT_FALSE(llama_layers_of({ "--gpu-layers=0" }, nullptr).on_gpu);
    EXPECT_FALSE(llama_layers_of({ "-ngl", "0,0" }, nullptr).on_gpu);   // llama-bench's list
    EXPECT_FALSE(llama_layers_of({ "-m", "x.gguf" }, "0").on_gpu);       // LLAMA_ARG_N_GPU_LAYERS
    EXPECT_FALSE(llama_layers_of({ "-ngl", "99", "-dev", "none" }, nullptr).on_gpu);
    EXPECT_FALSE(llama_layers_of({ "--device=none" }, "99").on_gpu);
}

TEST(llama_layers, any_layer_or_llama_cpps_default_keeps_the_gpu_llama_cpps) {
    for (const char * v : { "1", "99", "auto", "all", "-1", "0,99", "" }) {
        EXPECT_TRUE(llama_layers_of({ "-ngl", v }, nullptr).on_gpu) << v;
    }
    EXPECT_TRUE(llama_layers_of({ "-m", "x.gguf" }, nullptr).on_gpu) << "the default puts every layer that fits there";
    EXPECT_TRUE(llama_layers_of({ "-m", "x.gguf" }, "").on_gpu);
    EXPECT_TRUE(llama_layers_of({ "-ngl", "0", "-ngl", "12" }, nullptr).on_gpu) << "the last one counts";
    EXPECT_TRUE(llama_layers_of({ "-ngl", "8" }, "0").on_gpu) << "the argument before the environment";
    EXPECT_TRUE(llama_layers_of({ "-dev", "Vulkan0", "-ngl", "99" }, nullptr).on_gpu);
    const auto l = llama_layers_of({ "-ngl", "99" }, nullptr);
    EXPECT_NE(l.why.find("-ngl 99"), std::string::npos) << l.why;
}
