// The claim policy: which graph nodes the XDNA backend takes from llama.cpp's scheduler. One place, no exceptions.
//
// Claimed: MUL_MAT with at least GGML_XDNA_MIN_BATCH tokens and MUL_MAT_ID with at least that many tokens, on a leaf
// weight in host memory (plain CPU buffers, mmap'ed model files, or the CPU backend's CPU_REPACK buffers) of a type the
// backend can compute, with f32 activations and f32 results. Layout ops (NONE, VIEW, RESHAPE, PERMUTE, TRANSPOSE) are
// accepted because the scheduler and test-backend-ops ask about every tensor. Nothing else, ever: in particular never
// FLASH_ATTN_EXT or another fused op, which would make llama.cpp switch those off.
//
// Precision requests (ggml.h, TAG_GGML_PREC; docs/architecture.md, "Precision requests"): op_params[0] of MUL_MAT (and,
// from ggml 0.25, MUL_MAT_ID) is the least accumulator precision allowed, op_params[3] (ggml 0.25) the least precision
// src1 may be converted to. Every worker accumulates in f32 or better (the CPU backend in f32, the NPU's bf16 kernels in
// f32, its int8 kernels in exact int32 combined in f32, the GPU worker passes the request to its backend), so any
// accumulator request is honoured. A src1 request is honoured unless the NPU worker would convert src1 below it (bf16,
// or int8 with GGML_XDNA_NPU_W8): then the multiply is not claimed. Unknown values are not claimed.
#pragma once

#include <string>

#include "ggml-backend.h"

namespace xdna {

struct claim_context {
    int  min_batch      = 32;          // GGML_XDNA_MIN_BATCH
    bool small_batches  = false;       // GGML_XDNA_NPU_DECODE: claim multiplies below min_batch too
    ggml_backend_buffer_type_t repack_buft = nullptr;  // the CPU's CPU_REPACK buffer type, if it has one
    ggml_backend_dev_t cpu_dev = nullptr;              // the CPU worker's device: it must be able to do every row
    int npu_src1_prec = 0;   // what the NPU worker converts src1 to (prec_bf16, prec_q8), 0 without an NPU worker
};

// The levels of enum ggml_prec (ggml.h of ggml 0.25; before it only prec_default and prec_f32 existed), in decreasing
// rank: a request for one allows it and every level of a smaller value.
enum claim_prec : int32_t {
    prec_default = 0,
    prec_f32     = 10,
    prec_bf16    = 15,
    prec_f16     = 20,
    prec_q8      = 30,
    prec_q4      = 40,
};

// The requests of a MUL_MAT or MUL_MAT_ID node: the accumulator's (op_params[0]) and src1's (op_params[3]).
int32_t claim_acc_request(const ggml_tensor * op);
int32_t claim_src1_request(const ggml_tensor * op);

// True if converting src1 to `to` (a claim_prec level, 0: kept as is) honours `op`'s src1 request.
bool claim_src1_allows(const ggml_tensor * op, int32_t to);

// True if the backend takes `op`. On false, `why` (if given) names the first rule that failed.
bool claim(const ggml_tensor * op, const claim_context & ctx, std::string * why = nullptr);

// True for the weight buffer types the backend reads in place.
bool claim_weight_buft(ggml_backend_buffer_type_t buft, const claim_context & ctx);

// Number of tokens a claimable multiply processes (src1 columns; for MUL_MAT_ID the token count, not the expert slots).
int64_t claim_tokens(const ggml_tensor * op);

}  // namespace xdna
