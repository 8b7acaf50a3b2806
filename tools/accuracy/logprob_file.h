// Reader of the log-probability files llama-perplexity writes with --kl-divergence-base.
//
// Layout (pinned llama.cpp, tools/perplexity): "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk,
// int32 tokens[n_ctx * n_chunk], then for each chunk the last n_ctx - 1 - n_ctx/2 positions, one record each of
// 2*((n_vocab+1)/2) + 4 uint16: a float scale and a float min_log_prob (in the first four uint16), then n_vocab
// uint16 q with log p = scale * q + min_log_prob. Log-probabilities more than 16 nats below the top one are stored
// as q = 0 (clipped to min_log_prob).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace xdna {

class logprob_file {
public:
    // Throws std::runtime_error with a one-line message when the file is missing or malformed.
    explicit logprob_file(const std::string & path);
    ~logprob_file();
    logprob_file(const logprob_file &) = delete;
    logprob_file & operator=(const logprob_file &) = delete;

    int32_t n_ctx() const { return n_ctx_; }
    int32_t n_vocab() const { return n_vocab_; }
    int32_t n_chunk() const { return n_chunk_; }
    int64_t n_positions() const { return int64_t(n_chunk_) * per_chunk(); }
    int32_t per_chunk() const { return n_ctx_ - 1 - n_ctx_ / 2; }
    const std::vector<int32_t> & tokens() const { return tokens_; }

    // Reads the next position's log-probabilities into lp (n_vocab values); q0 (optional) receives which entries
    // were clipped. Returns false at the end of the file; throws on a short read.
    bool next(std::vector<float> & lp, std::vector<uint8_t> * clipped = nullptr);

private:
    std::string path_;
    FILE * f_ = nullptr;
    int32_t n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
    int64_t read_ = 0;
    std::vector<int32_t> tokens_;
    std::vector<uint16_t> rec_;
};

} // namespace xdna
