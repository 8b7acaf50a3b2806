// The persistent-thread worker base: work runs on another thread, set up beside the caller's preparation and run
// after it, results come back to the right caller, callers sharing one worker are serialised, and a failure (even an
// exception) becomes a failed result, never a crash.
#include "workers/async_worker.h"
#include "workers/lent_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace xdna;

namespace {

// Writes the row index into each of its rows of a shared array; throws on a range starting at 666.
class fake_device_worker final : public async_worker {
  public:
    explicit fake_device_worker(std::vector<int64_t> & out) : out(out) { start_thread(); }
    ~fake_device_worker() override { stop_thread(); }

    worker_kind kind() const override { return worker_kind::npu; }
    const char * name() const override { return "fake"; }
    bool accepts(const multiply &) const override { return true; }
    int64_t row_align(const multiply &) const override { return 1; }

    std::atomic<int> concurrent{ 0 }, max_concurrent{ 0 };
    std::thread::id  ran_on;
    std::chrono::microseconds preparing{ 0 };   // how long before_start takes
    std::atomic<int> prepared{ 0 };
    // before_start waits (up to 10 s) for the thread's set_up of the same job: `overlapped` counts those it saw
    bool             await_set_up = false;
    std::atomic<int> begun{ 0 }, set_ups{ 0 }, overlapped{ 0 }, ran_unprepared{ 0 };

  protected:
    void before_start(const multiply &, row_range) override {
        if (concurrent != 0) throw std::logic_error("prepared while the thread was busy");
        const int job = ++begun;
        if (await_set_up) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (set_ups.load() < job && std::chrono::steady_clock::now() < until) std::this_thread::yield();
            if (set_ups.load() >= job) ++overlapped;
        }
        std::this_thread::sleep_for(preparing);
        ++prepared;
    }

    void set_up(const multiply &, row_range) override { ++set_ups; }

    work_record run(const multiply &, row_range rows) override {
        if (prepared.load() != begun.load()) ++ran_unprepared;
        ran_on = std::this_thread::get_id();
        int c = ++concurrent;
        max_concurrent = std::max(max_concurrent.load(), c);
        if (rows.begin == 666) { --concurrent; throw std::runtime_error("device fault"); }
        for (int64_t r = rows.begin; r < rows.end; ++r) out[r] = r;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        --concurrent;
        return {};
    }

  private:
    std::vector<int64_t> & out;
};

const multiply none;   // the fake worker reads no multiply

}  // namespace

TEST(async_worker, runs_on_its_own_thread_and_returns_the_result) {
    std::vector<int64_t> out(100, -1);
    fake_device_worker w(out);
    w.begin(none, { 10, 60 });
    const work_record r = w.end();
    EXPECT_TRUE(r.ok());
    EXPECT_GT(r.seconds, 0.0);
    EXPECT_NE(w.ran_on, std::this_thread::get_id());
    for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(out[i], (i >= 10 && i < 60) ? i : -1);
}

TEST(async_worker, an_exception_becomes_a_failed_result_and_the_worker_stays_usable) {
    std::vector<int64_t> out(1000, -1);
    fake_device_worker w(out);
    w.begin(none, { 666, 700 });
    const work_record r = w.end();
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status, GGML_STATUS_FAILED);
    EXPECT_EQ(r.detail, "device fault");
    w.begin(none, { 0, 5 });
    EXPECT_TRUE(w.end().ok());
    EXPECT_EQ(out[4], 4);
}

// `n_callers` threads each begin and end `each` jobs of 10 rows on `w` (the rows 0 to 10 * n_callers * each, once
// each); the jobs that failed
static int shared_by_callers(fake_device_worker & w, int n_callers, int each) {
    std::vector<std::thread> callers;
    std::atomic<int> failures{ 0 };
    for (int t = 0; t < n_callers; ++t) {
        callers.emplace_back([&, t] {
            for (int i = 0; i < each; ++i) {
                const int64_t b = (t * each + i) * 10;
                w.begin(none, { b, b + 10 });
                if (!w.end().ok()) failures++;
            }
        });
    }
    for (auto & c : callers) c.join();
    return failures;
}

TEST(async_worker, callers_sharing_it_are_serialised) {
    std::vector<int64_t> out(4000, -1);
    fake_device_worker w(out);
    EXPECT_EQ(shared_by_callers(w, 4, 25), 0);
    EXPECT_EQ(w.max_concurrent, 1);
    for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(out[i], i);
}

// Where the caller leaves the thread a core (own_core), the hand-offs are spun for: the same results, callers still
// serialised, a failure still a result; and a preparation longer than the thread's spin (2 ms: it sleeps again) or
// none at all still hands the work over.
TEST(async_worker, spinning_hand_offs_give_the_same_results_whatever_the_preparation_takes) {
    for (const int prep_us : { 0, 50, 3000 }) {
        SCOPED_TRACE(prep_us);
        std::vector<int64_t> out(4000, -1);
        fake_device_worker w(out);
        w.own_core(true);
        w.preparing = std::chrono::microseconds(prep_us);
        EXPECT_EQ(shared_by_callers(w, 2, 10), 0);
        EXPECT_EQ(w.max_concurrent, 1);
        EXPECT_EQ(w.prepared, 20);
        for (int64_t i = 0; i < 200; ++i) EXPECT_EQ(out[i], i);
        w.begin(none, { 666, 700 });
        EXPECT_EQ(w.end().detail, "device fault");
        w.own_core(false);
        w.begin(none, { 300, 310 });
        EXPECT_TRUE(w.end().ok());
        EXPECT_EQ(out[309], 309);
    }
}

// Lent threads: without one, split() runs nothing and says so (the worker's thread never waits for a thread that is
// not there); with one in serve(), a split of two parts runs one of them on it and both are done when split()
// returns; after close() the lent thread returns. 1,000 splits, each part writing its own half of a row.
// The thread takes the job as begin() hands it over: its set_up runs while the caller's before_start is still at work
// (which waits for it, so a set_up that came only after would fail the count), and run only once before_start is over,
// whether the thread sleeps or spins at the hand-off.
TEST(async_worker, set_up_runs_beside_the_preparation_and_the_work_after_it) {
    std::vector<int64_t> out(100, -1);
    fake_device_worker w(out);
    w.await_set_up = true;
    w.preparing    = std::chrono::microseconds(300);
    for (const bool own : { false, true }) {
        w.own_core(own);
        for (int i = 0; i < 3; ++i) {
            w.begin(none, { 10 * i, 10 * i + 10 });
            ASSERT_TRUE(w.end().ok());
        }
    }
    EXPECT_EQ(w.set_ups.load(), 6);
    EXPECT_EQ(w.overlapped.load(), 6) << "set_up must run while before_start is at work";
    EXPECT_EQ(w.ran_unprepared.load(), 0) << "run must wait for before_start";
    for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(out[i], i < 30 ? i : -1);
}

TEST(lent_threads, splits_run_one_part_on_each_thread_and_none_without_one) {
    lent_threads lt;
    bool ran = false;
    EXPECT_FALSE(lt.split(2, [&](int) { ran = true; }));
    EXPECT_FALSE(ran);

    lt.open();
    std::thread lender([&] { lt.serve(); });
    while (lt.present() == 0) std::this_thread::yield();
    // each part waits until the other has begun: they can only end on two threads, the caller and the lent one
    std::atomic<int> begun{ 0 };
    std::thread::id on[2];
    const std::function<void(int)> probe = [&](int p) {
        on[p] = std::this_thread::get_id();
        begun.fetch_add(1);
        while (begun.load() < 2) std::this_thread::yield();
    };
    ASSERT_TRUE(lt.split(2, probe));
    EXPECT_NE(on[0], on[1]);
    EXPECT_TRUE(on[0] == lender.get_id() || on[1] == lender.get_id());
    std::vector<int> row(64);
    for (int i = 0; i < 1000; ++i) {
        const std::function<void(int)> part = [&](int p) {
            for (int j = p * 32; j < (p + 1) * 32; ++j) row[j] = i;
        };
        ASSERT_TRUE(lt.split(2, part));
        for (int j = 0; j < 64; ++j) ASSERT_EQ(row[j], i) << "split " << i << ", value " << j;
    }
    EXPECT_GE(lt.parts_served(), 1u);
    lt.close();
    lender.join();
    EXPECT_EQ(lt.present(), 0);
    EXPECT_FALSE(lt.split(2, probe));
}

// Several lent threads at once (the CPU worker's team): every part of every split runs exactly once, whoever takes
// it, and all are done when split() returns; parts beyond the threads' count queue up. Five lent threads, 2,000 splits
// of 1 to 37 parts, each part adding one to its own counter; a split whose six parts run at once, five of them on the
// lent threads; then every thread returns after close().
TEST(lent_threads, many_threads_run_every_part_exactly_once) {
    lent_threads lt;
    lt.open();
    std::vector<std::thread> lenders;
    for (int i = 0; i < 5; ++i) lenders.emplace_back([&] { lt.serve(); });
    while (lt.present() < 5) std::this_thread::yield();
    std::vector<std::atomic<int>> hits(37);
    for (int i = 0; i < 2000; ++i) {
        const int parts = 1 + i % 37;
        for (auto & h : hits) h.store(0);
        const std::function<void(int)> part = [&](int p) { hits[p].fetch_add(1); };
        ASSERT_TRUE(lt.split(parts, part));
        for (int p = 0; p < 37; ++p) ASSERT_EQ(hits[p].load(), p < parts ? 1 : 0) << "split " << i << ", part " << p;
    }
    // six parts that each wait until all have begun: they can only end on six threads at once, all five lent ones
    std::atomic<int> begun{ 0 };
    const std::function<void(int)> together = [&](int) {
        begun.fetch_add(1);
        while (begun.load() < 6) std::this_thread::yield();
    };
    const uint64_t served = lt.parts_served();
    ASSERT_TRUE(lt.split(6, together));
    EXPECT_EQ(lt.parts_served() - served, 5u);
    lt.close();
    for (auto & t : lenders) t.join();
    EXPECT_EQ(lt.present(), 0);
}

// What a device worker reports includes the wait for its thread to run after begin() handed it the job (where cores are
// short that wait can be longer than the work): a worker that measures a nanosecond of its own, of which all is fixed,
// reports more than that, in both figures, and no more than begin() to end() took.
TEST(async_worker, the_wait_for_the_thread_counts_as_fixed_time) {
    class measured_worker final : public async_worker {
      public:
        measured_worker() { start_thread(); }
        ~measured_worker() override { stop_thread(); }
        worker_kind kind() const override { return worker_kind::npu; }
        const char * name() const override { return "measured"; }
        bool accepts(const multiply &) const override { return true; }
        int64_t row_align(const multiply &) const override { return 1; }
      protected:
        work_record run(const multiply &, row_range) override {
            work_record r;
            r.seconds = r.fixed_seconds = 1e-9;
            return r;
        }
    } w;
    multiply m;
    for (int i = 0; i < 20; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        w.begin(m, { 0, 8 });
        const work_record r = w.end();
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ASSERT_TRUE(r.ok());
        EXPECT_GT(r.seconds, 1e-9);
        EXPECT_GT(r.fixed_seconds, 1e-9);
        EXPECT_LE(r.seconds, wall);
    }
}
