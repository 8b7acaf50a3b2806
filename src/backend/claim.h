// The claim policy: which graph nodes the XDNA backend takes from llama.cpp's scheduler. One place, no exceptions.
//
// Claimed: MUL_MAT with at least GGML_XDNA_MIN_BATCH tokens and MUL_MAT_ID with at least that many tokens, on a leaf
// weight in host memory (plain CPU buffers, mmap'ed model files, or the CPU backend's CPU_REPACK buffers) of a type the
// backend can compute, with f32 activations and f32 results. Layout ops (NONE, VIEW, RESHAPE, PERMUTE, TRANSPOSE) are
// accepted because the scheduler and test-backend-ops ask about every tensor. Nothing else, ever: in particular never
// FLASH_ATTN_EXT or another fused op, which would make llama.cpp switch those off.
#pragma once

#include "ggml-backend.h"

namespace xdna {

struct claim_context {
    int  min_batch      = 32;          // GGML_XDNA_MIN_BATCH
    bool small_batches  = false;       // GGML_XDNA_NPU_DECODE: claim multiplies below min_batch too
    ggml_backend_buffer_type_t repack_buft = nullptr;  // the CPU's CPU_REPACK buffer type, if it has one
    ggml_backend_dev_t cpu_dev = nullptr;              // the CPU worker's device: it must be able to do every row
};

// True if the backend takes `op`. On false, `why` (if given) names the first rule that failed.
bool claim(const ggml_tensor * op, const claim_context & ctx, const char ** why = nullptr);

// True for the weight buffer types the backend reads in place.
bool claim_weight_buft(ggml_backend_buffer_type_t buft, const claim_context & ctx);

// Number of tokens a claimable multiply processes (src1 columns; for MUL_MAT_ID the token count, not the expert slots).
int64_t claim_tokens(const ggml_tensor * op);

}  // namespace xdna
