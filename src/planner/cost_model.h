// What the split planner learns about one worker on one matrix shape: its time as a function of its rows,
//   T(rows) = a + b * x(rows)
// where x is the worker's unit of work: its rows (CPU, GPU, an NPU without a cost hint) or its kernel launches
// (an NPU whose worker says how many launches a row count takes, see launch_cost). `a` is what a multiply costs
// whatever its size (the NPU's first dispatch, converting the activations); `b` the cost of one unit.
//
// Robust on purpose: the estimates are means of the middle half of the last `window` measurements (the lower median
// while there are fewer than 4), so the first, slow call (page faults, weight conversion) stops counting from the
// second measurement on, and a single hiccup does not move them. Erring towards the faster reading keeps a worker
// that was slow once in the race. Deterministic: the same measurements in the same order give the same model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace xdna {

class cost_model {
  public:
    static constexpr int    window = 15;    // measurements kept: a real change of speed shows after about window / 2
    static constexpr double spread = 2.0;   // sizes this far apart tell `a` from `b`...
    static constexpr int    per_side = 3;   // ...given this many measurements at each end

    // Starting point before any measurement (b <= 0: unknown), and whether `a` is learned (else it stays 0 or the
    // prior). `a` is told apart from `b` only by measurements of clearly different sizes; once learned it is kept.
    void set_prior(double a, double b, bool learn_intercept) {
        prior_a = std::max(0.0, a);
        prior_b = b;
        learn_a = learn_intercept;
        if (n == 0) { this->a = prior_a; this->b = prior_b; }
        else fit();
    }

    // One measurement: `x` units of work took `seconds`. Non-finite or non-positive readings are ignored.
    void add(double x, double seconds) {
        if (!(x > 0.0) || !(seconds > 0.0) || !std::isfinite(seconds) || !std::isfinite(x)) return;
        xs[head] = x;
        ts[head] = seconds;
        head = (head + 1) % window;
        n = std::min(n + 1, window);
        total++;
        fit();
    }

    // Like add(), for a speed that may have been misjudged badly (measured beside one-time work, or taken from another
    // shape): a second reading in a row under half of what the model predicts replaces what it had with the two.
    // One such reading alone changes nothing (a hiccup); a worker is not twice as fast by chance twice in a row.
    void add_or_restart(double x, double seconds) {
        const bool low = n > 0 && seconds > 0.0 && seconds < 0.5 * predict(x);
        if (low && low_run > 0) {
            forget();
            add(low_x, low_s);
            low_run = 0;
        } else {
            low_run = low ? 1 : 0;
            low_x = x;
            low_s = seconds;
        }
        add(x, seconds);
    }

    // The last reading was under half of what the model predicts: one more would replace it (add_or_restart).
    bool    doubted() const { return low_run > 0; }

    // Its whole state as one line of numbers, and back (the planner's state file keeps what was learned between
    // processes). load() takes only a line save() wrote, whole and in range; otherwise it returns false and the
    // model stays as it was.
    std::string save() const {
        std::string out;
        char buf[64];
        auto put = [&](double v) { snprintf(buf, sizeof(buf), out.empty() ? "%.17g" : " %.17g", v); out += buf; };
        for (double v : { (double) learn_a, (double) has_learned_a, learned_a, prior_a, prior_b, (double) total, (double) n }) put(v);
        for (int i = 0; i < n; ++i) {
            const int j = (head - n + i + window) % window;   // oldest first
            put(xs[j]);
            put(ts[j]);
        }
        return out;
    }
    bool load(const std::string & line) {
        double v[7 + 2 * window];
        int    got = 0;
        const char * p = line.c_str();
        for (char * end = nullptr; got < 7 + 2 * window; p = end) {
            const double d = strtod(p, &end);
            if (end == p) break;
            v[got++] = d;
        }
        while (*p == ' ') ++p;
        if (got < 7 || *p != '\0') return false;
        const int m = (int) v[6];
        if (v[6] != m || m < 0 || m > window || got != 7 + 2 * m || v[5] < m) return false;
        for (int i = 0; i < got; ++i) if (!std::isfinite(v[i])) return false;
        for (int i = 0; i < m; ++i) if (!(v[7 + 2 * i] > 0.0) || !(v[8 + 2 * i] > 0.0)) return false;
        *this = cost_model();
        learn_a = v[0] != 0.0;
        has_learned_a = v[1] != 0.0;
        learned_a = std::max(0.0, v[2]);
        prior_a = std::max(0.0, v[3]);
        prior_b = v[4];
        for (int i = 0; i < m; ++i) {
            xs[i] = v[7 + 2 * i];
            ts[i] = v[8 + 2 * i];
        }
        n = m;
        head = m % window;
        total = (int64_t) v[5];
        if (n > 0) fit();
        else { a = has_learned_a ? learned_a : prior_a; b = prior_b; }
        return true;
    }

    // Drops the measurements (what was learned of the intercept stays), for a speed that has clearly changed.
    void forget() { n = 0; head = 0; }

    bool    known()   const { return b > 0.0; }      // it can predict (measured, or a prior)
    int64_t samples() const { return total; }        // measurements so far
    double  intercept() const { return a; }
    double  slope()     const { return b; }
    // whether `a` is to be learned and has not been yet: the planner then measures another size now and then
    bool    needs_spread() const { return learn_a && !has_learned_a; }

    // What the measurements in the window take beyond `per_x` seconds a unit: the centre of t - per_x * x (as for
    // the intercept, the mean of the middle half); 0 with none.
    double excess_over(double per_x) const {
        if (n == 0) return 0.0;
        double buf[window] = {};
        for (int i = 0; i < n; ++i) buf[i] = ts[i] - per_x * xs[i];   // the window's readings, in any order
        return centre(buf, n);
    }

    // Predicted seconds for `x` units; no work costs nothing (the worker is not started).
    double predict(double x) const { return x > 0.0 ? a + b * x : 0.0; }

  private:
    // lower median of v[0..m): the element of rank (m - 1) / 2
    static double lower_median(double * v, int m) {
        std::nth_element(v, v + (m - 1) / 2, v + m);
        return v[(m - 1) / 2];
    }

    // The centre of v[0..m): the mean of its middle half, which ignores the slowest and fastest quarter (the first
    // call, hiccups) yet averages the rest, so it is steadier than a median under everyday noise. Below 4 readings,
    // the lower median (of two: the faster one).
    static double centre(double * v, int m) {
        if (m < 4) return lower_median(v, m);
        std::sort(v, v + m);
        const int drop = (m + 3) / 4;
        double s = 0.0;
        for (int i = drop; i < m - drop; ++i) s += v[i];
        return s / (double) (m - 2 * drop);
    }

    // Theil-Sen over the window: the median slope over pairs of clearly different sizes, then the centre of the
    // intercepts. Only with enough measurements at both ends, so that no single reading decides it.
    bool fit_intercept(double * buf) {
        double xmin = xs[0], xmax = xs[0];
        for (int i = 1; i < n; ++i) { xmin = std::min(xmin, xs[i]); xmax = std::max(xmax, xs[i]); }
        if (xmax < spread * xmin) return false;
        int low = 0, high = 0;
        for (int i = 0; i < n; ++i) {
            low  += xs[i] * spread <= xmax;
            high += xs[i] >= spread * xmin;
        }
        if (low < per_side || high < per_side) return false;
        int m = 0;
        for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n; ++j) {
                if (xs[j] >= spread * xs[i]) buf[m++] = (ts[j] - ts[i]) / (xs[j] - xs[i]);
            }
        }
        const double s = lower_median(buf, m);
        if (!(s > 0.0)) return false;
        for (int i = 0; i < n; ++i) buf[i] = ts[i] - s * xs[i];
        const double icpt = centre(buf, n);
        if (icpt < 0.0) return false;
        a = learned_a = icpt;   // kept for when the window covers one size again
        b = s;
        has_learned_a = true;
        return true;
    }

    void fit() {
        double buf[window * window];
        if (learn_a && fit_intercept(buf)) return;
        // The intercept stays at the last one learned (else the prior), unless the measurements show it cannot be
        // that large: then at most 90% (of a prior: half) of a typical reading goes to it.
        for (int i = 0; i < n; ++i) buf[i] = ts[i];
        const double typical = lower_median(buf, n);
        a = has_learned_a ? std::min(learned_a, 0.9 * typical) : std::min(prior_a, 0.5 * typical);
        for (int i = 0; i < n; ++i) buf[i] = std::max(ts[i] - a, 0.1 * ts[i]) / xs[i];
        b = centre(buf, n);
    }

    double  xs[window] = {}, ts[window] = {};
    int     head = 0, n = 0;
    int64_t total = 0;
    double  prior_a = 0.0, prior_b = 0.0;
    bool    learn_a = false, has_learned_a = false;
    double  learned_a = 0.0;
    int     low_run = 0;                 // readings in a row under half the prediction (add_or_restart)
    double  low_x = 0.0, low_s = 0.0;    // the last of them
    double  a = 0.0, b = 0.0;
};

}  // namespace xdna
