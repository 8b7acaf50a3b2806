// Threads lent to a worker for a while (worker::help): the CPU worker's team, idle once it has computed the CPU's
// rows until the device workers are done. The worker's own thread splits a piece of host work with them: it posts
// the piece in parts, takes parts itself, and returns once every part is done. Nothing is posted unless a thread is
// there, so the worker's thread never waits for one that is not coming; lent threads spin (their cores are idle
// anyway) so that a piece of ~100 us is not delayed by a sleeping thread's wake-up (20-90 us on the development VMs).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace xdna {

class lent_threads {
  public:
    // The owner, before the work is handed to the worker's thread: threads may be lent from now until close().
    void open() { over.store(false, std::memory_order_release); }
    // The worker's thread, when the work is over (whatever way it ended): the lent threads return.
    void close() { over.store(true, std::memory_order_release); }
    // A lent thread (any number at once): does the parts posted until close().
    void serve();
    // Threads in serve() now: how many parts a piece is worth splitting into (a hint; one may come or go).
    int present() const { return n_present.load(std::memory_order_acquire); }
    // The worker's thread: runs part(p) once for every p in [0, parts), spread over itself and the lent threads, and
    // returns once all are done. Without a lent thread, false: nothing was run.
    bool split(int parts, const std::function<void(int)> & part);
    // The same, posted whether or not a thread is lent yet (one lent a moment later takes the parts still left, the
    // worker's thread all that nobody claims): for work that comes before the lent threads may have arrived.
    void share(int parts, const std::function<void(int)> & part);
    // For tests: while a thread is lent, the worker's thread leaves every part of a piece to the lent threads instead
    // of racing them for it (which thread claims a part is otherwise up to the scheduler: on a loaded machine a lent
    // thread may not run while a piece of 50 us is posted).
    void leave_parts_to_lent_threads(bool on) { leave_parts.store(on, std::memory_order_relaxed); }
    // Parts the lent threads have done so far (for tests and the timeline's figures).
    uint64_t parts_served() const { return taken.load(std::memory_order_acquire); }
    // Pieces split() or share() posted of which a lent thread took a part, so far (each part went to whichever thread
    // claimed it first: the worker's own thread too, where a lent thread is slow to come).
    uint64_t pieces_shared() const { return pieces.load(std::memory_order_acquire); }

  private:
    // A part of the piece posted now, claimed (its index), or -1 when none is left.
    int claim();

    // The piece posted now: generation (32 bits), parts (16), parts claimed so far (16), claimed in one step, so a
    // thread that claims a part knows it claimed one of this piece, whose `task` is then valid until it is done.
    std::atomic<uint64_t> ticket{ 0 };
    std::atomic<int>      done{ 0 };       // parts of the piece posted now that are done
    std::atomic<int>      n_present{ 0 };
    std::atomic<bool>     over{ true };
    std::atomic<bool>     leave_parts{ false };
    std::atomic<uint64_t> taken{ 0 }, pieces{ 0 };
    const std::function<void(int)> * task = nullptr;   // written before `ticket`, read after a claim
    uint32_t              generation = 0;              // the worker's thread only
};

}  // namespace xdna
