// The tokenizer of a generated model: copied from a real vocabulary file of the pinned llama.cpp source
// (models/ggml-vocab-<name>.gguf), padded or cut to the model's vocabulary size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

namespace xdna {

// Copies every tokenizer.* key of vocab_path into dst. A larger n_vocab appends unused "[PAD<i>]" tokens (as
// conversions of real models do); a smaller one keeps the control tokens and the first (most frequent) ordinary
// tokens with the merges among them, which a byte-level BPE tokenizer needs to encode any text. add_bos overrides
// tokenizer.ggml.add_bos_token. Throws std::runtime_error with a one-line message on bad input.
// Returns, per token of the written vocabulary, whether it is plain text: an ordinary token whose bytes are
// complete UTF-8 (not a control, padding or byte token, nor a piece of a multi-byte character).
std::vector<uint8_t> copy_tokenizer(gguf_context * dst, const std::string & vocab_path, int64_t n_vocab, bool add_bos);

// The bytes a byte-level BPE (gpt2) token stands for: its text maps each byte to one code point (printable
// Latin-1 bytes to themselves, the rest to 256 + n in byte order). Empty when the text is not such a token.
std::string bpe_token_bytes(const std::string & text);

// Whether s is complete, valid UTF-8.
bool is_valid_utf8(const std::string & s);

} // namespace xdna
