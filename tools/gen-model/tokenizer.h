// The tokenizer of a generated model: copied from a real vocabulary file of the pinned llama.cpp source
// (models/ggml-vocab-<name>.gguf), padded or cut to the model's vocabulary size.
#pragma once

#include <cstdint>
#include <string>

struct gguf_context;

namespace xdna {

// Copies every tokenizer.* key of vocab_path into dst. A larger n_vocab appends unused "[PAD<i>]" tokens (as
// conversions of real models do); a smaller one keeps the control tokens and the first (most frequent) ordinary
// tokens with the merges among them, which a byte-level BPE tokenizer needs to encode any text. add_bos overrides
// tokenizer.ggml.add_bos_token. Throws std::runtime_error with a one-line message on bad input.
void copy_tokenizer(gguf_context * dst, const std::string & vocab_path, int64_t n_vocab, bool add_bos);

} // namespace xdna
