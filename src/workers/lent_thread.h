// A thread lent to a worker for a while (worker::help): the thread that computed the CPU worker's rows, idle until
// the device workers are done. The worker's own thread splits a piece of host work with it: it posts the piece, does
// its own part, and waits for the lent thread's part. Nothing is posted unless a thread is there, so the worker's
// thread never waits for one that is not coming; the lent thread spins (its core is idle anyway) so that a piece of
// ~100 us is not delayed by a sleeping thread's wake-up (20-90 us on the development VMs).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace xdna {

class lent_thread {
  public:
    // The owner, before the work is handed to the worker's thread: a thread may be lent from now until close().
    void open() { over.store(false, std::memory_order_release); }
    // The worker's thread, when the work is over (whatever way it ended): the lent thread returns.
    void close() { over.store(true, std::memory_order_release); }
    // The lent thread: does the parts posted to it until close().
    void serve();
    // The worker's thread: runs part(1) on the lent thread and part(0) here, and returns once both are done. Without
    // a lent thread, false: nothing was run.
    bool split(const std::function<void(int)> & part);
    // Parts the lent threads have done so far (for tests and the timeline's figures).
    uint64_t parts_served() const { return taken.load(std::memory_order_acquire); }

  private:
    std::atomic<bool>     present{ false };   // a thread is in serve()
    std::atomic<bool>     over{ true };
    std::atomic<uint64_t> posted{ 0 }, taken{ 0 };
    const std::function<void(int)> * task = nullptr;   // written before `posted`, read after it
};

}  // namespace xdna
