// Output scale that makes a random lm head give peaked next-token distributions.
#pragma once

#include <cstdint>

namespace xdna {

// The logits of a random lm head are, for any hidden state, independent Gaussians across the vocabulary with a
// standard deviation sigma set by the final norm's gain. Returns the sigma whose softmax has, on average over
// samples of n_vocab Gaussians, the given entropy in nats (bisection on a seeded Monte Carlo estimate).
double logit_sigma_for_entropy(int64_t n_vocab, double target_nats, uint64_t seed);

// Mean entropy (nats) of softmax(sigma * x) for x ~ N(0, 1)^n_vocab, over n_samples draws.
double mean_entropy_of_gaussian_logits(int64_t n_vocab, double sigma, int n_samples, uint64_t seed);

} // namespace xdna
