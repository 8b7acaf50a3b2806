// The learned time model of one worker on one shape: exact on clean data, robust to the slow first call and to a
// single hiccup, and following a real change of speed.
#include "planner/cost_model.h"

#include <gtest/gtest.h>

#include <random>

using xdna::cost_model;

TEST(cost_model, unknown_until_measured_or_given_a_prior) {
    cost_model m;
    EXPECT_FALSE(m.known());
    EXPECT_EQ(m.predict(100), 0.0);
    m.set_prior(1e-3, 2e-3, true);
    EXPECT_TRUE(m.known());
    EXPECT_DOUBLE_EQ(m.predict(3), 1e-3 + 3 * 2e-3);
    EXPECT_EQ(m.predict(0), 0.0) << "no work: the worker is not started, so it costs nothing";
}

TEST(cost_model, proportional_model_recovers_the_per_row_cost) {
    cost_model m;   // CPU / GPU: no intercept
    m.add(1000, 5e-3);
    EXPECT_DOUBLE_EQ(m.slope(), 5e-6);
    EXPECT_DOUBLE_EQ(m.intercept(), 0.0);
    EXPECT_DOUBLE_EQ(m.predict(2000), 10e-3);
}

TEST(cost_model, learns_intercept_and_slope_from_different_sizes) {
    cost_model m;
    m.set_prior(0.0, 0.0, true);
    const double a = 300e-6, b = 4e-6;
    for (double x : { 256.0, 1024.0, 512.0, 2048.0, 768.0 }) m.add(x, a + b * x);
    EXPECT_NEAR(m.intercept(), a, 1e-12);
    EXPECT_NEAR(m.slope(), b, 1e-15);
}

TEST(cost_model, keeps_the_prior_intercept_when_sizes_do_not_differ_enough) {
    cost_model m;
    m.set_prior(200e-6, 0.0, true);
    m.add(1000, 200e-6 + 1000 * 3e-6);
    m.add(1100, 200e-6 + 1100 * 3e-6);   // 1.1x apart: intercept and slope cannot be told apart
    EXPECT_DOUBLE_EQ(m.intercept(), 200e-6);
    EXPECT_NEAR(m.slope(), 3e-6, 1e-15);
}

TEST(cost_model, caps_a_prior_intercept_the_measurements_contradict) {
    cost_model m;
    m.set_prior(10e-3, 0.0, true);   // a prior of 10 ms, but the whole multiply takes 1 ms
    m.add(512, 1e-3);
    EXPECT_LE(m.intercept(), 0.5e-3);
    EXPECT_GT(m.slope(), 0.0);
    EXPECT_NEAR(m.predict(512), 1e-3, 1e-12);
}

TEST(cost_model, slow_first_call_stops_counting_from_the_second_measurement) {
    cost_model m;
    m.add(1000, 50e-3);   // first call: page faults, conversion
    EXPECT_DOUBLE_EQ(m.slope(), 50e-6);
    m.add(1000, 5e-3);
    EXPECT_DOUBLE_EQ(m.slope(), 5e-6) << "the lower median of two readings is the faster one";
}

TEST(cost_model, one_hiccup_does_not_move_the_estimate) {
    cost_model m;
    for (int i = 0; i < 8; ++i) m.add(1000, 5e-3);
    m.add(1000, 100e-3);   // one 20x reading
    EXPECT_DOUBLE_EQ(m.slope(), 5e-6);
    m.add(1000, 0.1e-3);   // and one impossibly fast one
    EXPECT_DOUBLE_EQ(m.slope(), 5e-6);
}

// Readings taken beside one-time work (the first prompt) can be 10x slow; add_or_restart lets two readings in a row
// under half of the prediction replace them, while one alone (a hiccup) changes nothing.
TEST(cost_model, two_fast_readings_in_a_row_replace_a_model_built_on_slow_ones) {
    cost_model m;
    for (int i = 0; i < 3; ++i) m.add_or_restart(1000, 50e-3);
    m.add_or_restart(1000, 5e-3);
    EXPECT_TRUE(m.doubted());
    EXPECT_DOUBLE_EQ(m.slope(), 50e-6) << "one fast reading is not enough";
    m.add_or_restart(1000, 40e-3);
    EXPECT_FALSE(m.doubted()) << "a reading that agrees with the model ends the doubt";
    m.add_or_restart(1000, 5e-3);
    m.add_or_restart(1000, 5.5e-3);
    EXPECT_FALSE(m.doubted());
    EXPECT_DOUBLE_EQ(m.slope(), 5e-6) << "two in a row: the model is the two (their lower median)";
    for (int i = 0; i < 8; ++i) m.add_or_restart(1000, 5e-3);
    m.add_or_restart(1000, 0.1e-3);   // one impossibly fast reading changes nothing
    EXPECT_DOUBLE_EQ(m.slope(), 5e-6);
}

TEST(cost_model, follows_a_real_change_of_speed_within_the_window) {
    cost_model m;
    for (int i = 0; i < cost_model::window; ++i) m.add(1000, 5e-3);
    int took = 0;
    while (m.slope() < 7.5e-6 && took < 100) { m.add(1000, 10e-3); took++; }
    EXPECT_EQ(took, cost_model::window / 2 + 1) << "halfway once half of the window has the new speed";
    for (int i = took; i < cost_model::window; ++i) m.add(1000, 10e-3);
    EXPECT_DOUBLE_EQ(m.slope(), 10e-6) << "all the way once the window has only the new speed";
}

TEST(cost_model, noisy_readings_give_an_estimate_within_the_noise) {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0.9, 1.1);
    cost_model m;
    m.set_prior(180e-6, 0.0, true);
    double worst = 0.0;
    for (int i = 0; i < 500; ++i) {
        const double x = 256.0 * (1 + i % 8);
        m.add(x, (180e-6 + 3e-6 * x) * u(rng));
        if (i >= cost_model::window) worst = std::max(worst, std::abs(m.predict(1536) / (180e-6 + 3e-6 * 1536) - 1.0));
    }
    EXPECT_LT(worst, 0.10) << "the prediction at a typical size stays inside the +-10% noise band";
}

TEST(cost_model, ignores_readings_that_are_not_times) {
    cost_model m;
    m.add(1000, 5e-3);
    m.add(1000, -1.0);
    m.add(1000, 0.0);
    m.add(1000, std::nan(""));
    m.add(1000, HUGE_VAL);
    m.add(0, 1.0);
    EXPECT_EQ(m.samples(), 1);
    EXPECT_DOUBLE_EQ(m.slope(), 5e-6);
}

TEST(cost_model, same_measurements_give_the_same_model) {
    cost_model a, b;
    a.set_prior(1e-4, 0, true);
    b.set_prior(1e-4, 0, true);
    std::mt19937_64 r1(9), r2(9);
    std::uniform_real_distribution<double> u(0.5, 2.0);
    for (int i = 0; i < 100; ++i) {
        const double x1 = 100 + i * 37 % 900, x2 = x1;
        a.add(x1, 1e-3 * u(r1));
        b.add(x2, 1e-3 * u(r2));
        ASSERT_EQ(a.slope(), b.slope());
        ASSERT_EQ(a.intercept(), b.intercept());
    }
}

TEST(cost_model, the_excess_over_a_rate_is_the_centre_of_what_each_reading_takes_beyond_it) {
    // 0.3 ms + 2 us a row, measured at 256 and 512 rows, one reading 10x slow: beyond 2 us a row, 0.3 ms
    cost_model m;
    EXPECT_EQ(m.excess_over(2e-6), 0.0);
    for (int i = 0; i < 8; ++i) m.add(i % 2 ? 256 : 512, 3e-4 + 2e-6 * (i % 2 ? 256 : 512));
    m.add(256, 10 * (3e-4 + 2e-6 * 256));
    EXPECT_NEAR(m.excess_over(2e-6), 3e-4, 1e-9);
    // taken as a rate alone (no intercept is learned), the same readings put 512 rows at 2x 256's
    EXPECT_NEAR(m.predict(512) / m.predict(256), 2.0, 1e-9);
}
