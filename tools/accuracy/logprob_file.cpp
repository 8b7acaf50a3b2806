#include "logprob_file.h"

#include <cstring>
#include <stdexcept>

namespace xdna {

logprob_file::logprob_file(const std::string & path) : path_(path) {
    f_ = fopen(path.c_str(), "rb");
    if (!f_) {
        throw std::runtime_error(path + ": cannot open: " + strerror(errno));
    }
    char magic[8];
    int32_t hdr[3];
    if (fread(magic, 1, 8, f_) != 8 || memcmp(magic, "_logits_", 8) != 0 || fread(hdr, sizeof(int32_t), 3, f_) != 3) {
        throw std::runtime_error(path + ": not a llama-perplexity log-probability file (no _logits_ header)");
    }
    n_ctx_ = hdr[0];
    n_vocab_ = hdr[1];
    n_chunk_ = hdr[2];
    if (n_ctx_ < 4 || n_vocab_ < 2 || n_chunk_ < 1 || n_vocab_ > (1 << 24) || n_ctx_ > (1 << 24)) {
        throw std::runtime_error(path + ": implausible header (n_ctx " + std::to_string(n_ctx_) + ", n_vocab " +
                                 std::to_string(n_vocab_) + ", n_chunk " + std::to_string(n_chunk_) + ")");
    }
    tokens_.resize(size_t(n_ctx_) * n_chunk_);
    if (fread(tokens_.data(), sizeof(int32_t), tokens_.size(), f_) != tokens_.size()) {
        throw std::runtime_error(path + ": truncated in the token list");
    }
    rec_.resize(2 * ((size_t(n_vocab_) + 1) / 2) + 4);
}

logprob_file::~logprob_file() {
    if (f_) {
        fclose(f_);
    }
}

bool logprob_file::next(std::vector<float> & lp, std::vector<uint8_t> * clipped) {
    if (read_ >= n_positions()) {
        return false;
    }
    if (fread(rec_.data(), sizeof(uint16_t), rec_.size(), f_) != rec_.size()) {
        throw std::runtime_error(path_ + ": truncated at position " + std::to_string(read_) + " of " + std::to_string(n_positions()));
    }
    ++read_;
    float scale, min_lp;
    memcpy(&scale, &rec_[0], sizeof(float));
    memcpy(&min_lp, &rec_[2], sizeof(float));
    lp.resize(n_vocab_);
    if (clipped) {
        clipped->resize(n_vocab_);
    }
    const uint16_t * q = rec_.data() + 4;
    // the stored range is 16 nats when llama-perplexity clipped; below that, q = 0 is the true minimum
    const bool range_clipped = scale * 65535.0f > 16.0f - 1e-3f;
    for (int32_t i = 0; i < n_vocab_; ++i) {
        lp[i] = scale * q[i] + min_lp;
        if (clipped) {
            (*clipped)[i] = range_clipped && q[i] == 0;
        }
    }
    return true;
}

} // namespace xdna
