// XDNA_EMU_* settings and the emulator's log.
#include "emu_config.h"

#include "xdna1_timing.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace xdna_emu {

const char* mode_name(enum mode m) {
    switch (m) {
        case mode::exact: return "exact";
        case mode::timed: return "timed";
        case mode::null:  return "null";
    }
    return "?";
}

const char* fault_name(enum fault f) {
    switch (f) {
        case fault::none:    return "none";
        case fault::error:   return "error";
        case fault::timeout: return "timeout";
        case fault::nan:     return "nan";
        case fault::bf16:    return "bf16";
        case fault::wrong:   return "wrong";
    }
    return "?";
}

const char* accum_name(enum accum a) {
    switch (a) {
        case accum::exact:   return "exact";
        case accum::aligned: return "aligned";
    }
    return "?";
}

void log(int level, int threshold, const char* fmt, ...) {
    if (level > threshold) {
        return;
    }
    static std::mutex mu;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(stderr, "[xdna-emu] %s\n", line);
}

const char* driver_name(enum driver d) {
    switch (d) {
        case driver::intree:    return "intree";
        case driver::outoftree: return "outoftree";
    }
    return "?";
}

namespace {

const char* env(const char* name) {
    const char* v = std::getenv(name);
    return (v && *v) ? v : nullptr;
}

void bad_value(const char* name, const char* value, const char* expected) {
    log(0, 0, "ignoring %s=%s: expected %s", name, value, expected);
}

void read_double(const char* name, double* out, double lo) {
    const char* v = env(name);
    if (!v) return;
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo)) {
        bad_value(name, v, "a number");
        return;
    }
    *out = d;
}

template <typename T> void read_int(const char* name, T* out, long long lo, long long hi) {
    const char* v = env(name);
    if (!v) return;
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        bad_value(name, v, "an integer in range");
        return;
    }
    *out = static_cast<T>(x);
}

} // namespace

config::config()
    : dispatch_us(xdna::xdna1_dispatch_s * 1e6),
      queued_us(xdna::xdna1_queued_s * 1e6),
      switch_us(xdna::xdna1_switch_s * 1e6),
      clock_hz(xdna::xdna1_clock_default_hz) {}

xdna::xdna1_device_timing config::timing() const {
    xdna::xdna1_device_timing t;
    t.clock_hz = clock_hz;
    t.dispatch_s = dispatch_us * 1e-6;
    t.queued_s = queued_us * 1e-6;
    t.switch_s = switch_us * 1e-6;
    t.flat_bf16_flops = bf16_gflops * 1e9;
    t.flat_int8_ops = int8_gops * 1e9;
    return t;
}

config config::from_env() {
    config c;
    read_int("XDNA_EMU_LOG", &c.log_level, 0, 3);
    if (const char* v = env("XDNA_EMU_MODE")) {
        if (!std::strcmp(v, "exact")) c.mode = mode::exact;
        else if (!std::strcmp(v, "timed")) c.mode = mode::timed;
        else if (!std::strcmp(v, "null")) c.mode = mode::null;
        else bad_value("XDNA_EMU_MODE", v, "exact, timed or null");
    }
    read_double("XDNA_EMU_DISPATCH_US", &c.dispatch_us, 0.0);
    read_double("XDNA_EMU_QUEUED_US", &c.queued_us, 0.0);
    read_double("XDNA_EMU_SWITCH_US", &c.switch_us, 0.0);
    if (const char* v = env("XDNA_EMU_POWER_MODE")) {
        if (const double hz = xdna::xdna1_clock_of_mode(v)) {
            c.clock_hz = hz;
            c.power_mode = v;
        } else {
            bad_value("XDNA_EMU_POWER_MODE", v, "default, performance, turbo, balanced or powersaver");
        }
    }
    read_double("XDNA_EMU_BF16_GFLOPS", &c.bf16_gflops, 1e-3);
    read_double("XDNA_EMU_INT8_GOPS", &c.int8_gops, 1e-3);
    read_int("XDNA_EMU_THREADS", &c.threads, 1, 256);
    read_int("XDNA_EMU_HWCTX_LIMIT", &c.hwctx_limit, 1, 64);
    read_int("XDNA_EMU_OTHER_CONTEXTS", &c.other_contexts, 0, 64);
    size_t heap_mb = c.heap_bytes >> 20;
    read_int("XDNA_EMU_HEAP_MB", &heap_mb, 1, 4096);
    c.heap_bytes = heap_mb << 20;
    size_t memlock_mb = 0;
    read_int("XDNA_EMU_MEMLOCK_MB", &memlock_mb, 0, size_t(1) << 30);
    if (memlock_mb) c.memlock_bytes = memlock_mb << 20;
    if (const char* v = env("XDNA_EMU_FAULT")) {
        if (!std::strcmp(v, "none")) c.fault = fault::none;
        else if (!std::strcmp(v, "error")) c.fault = fault::error;
        else if (!std::strcmp(v, "timeout")) c.fault = fault::timeout;
        else if (!std::strcmp(v, "nan")) c.fault = fault::nan;
        else if (!std::strcmp(v, "bf16")) c.fault = fault::bf16;
        else if (!std::strcmp(v, "wrong")) c.fault = fault::wrong;
        else bad_value("XDNA_EMU_FAULT", v, "none, error, timeout, nan, bf16 or wrong");
    }
    read_int("XDNA_EMU_FAULT_AFTER", &c.fault_after, 0, 1LL << 40);
    read_int("XDNA_EMU_FAULT_COUNT", &c.fault_count, 0, 1LL << 40);
    read_int("XDNA_EMU_HANG_MS", &c.hang_ms, 0, 3600 * 1000);
    read_int("XDNA_EMU_TDR_MS", &c.tdr_ms, 0, 3600 * 1000);
    if (const char* v = env("XDNA_EMU_DRIVER")) {
        if (!std::strcmp(v, "intree")) c.driver = driver::intree;
        else if (!std::strcmp(v, "outoftree")) c.driver = driver::outoftree;
        else bad_value("XDNA_EMU_DRIVER", v, "intree or outoftree");
    }
    read_int("XDNA_EMU_JOB_TIMEOUT_MS", &c.job_timeout_ms, 0, 3600 * 1000);
    if (const char* v = env("XDNA_EMU_ACCUM")) {
        if (!std::strcmp(v, "exact")) c.accum = accum::exact;
        else if (!std::strcmp(v, "aligned")) c.accum = accum::aligned;
        else bad_value("XDNA_EMU_ACCUM", v, "exact or aligned");
    }
    if (const char* v = env("XDNA_EMU_CHECK_SYNC")) {
        c.check_sync = std::strcmp(v, "0") != 0;
    }
    return c;
}

std::string config::describe() const {
    char speed[160];
    if (bf16_gflops > 0 || int8_gops > 0) {
        std::snprintf(speed, sizeof(speed), "flat rates (a what-if): bf16 %s, int8 %s",
                      bf16_gflops > 0 ? (std::to_string(int(bf16_gflops)) + " GFLOP/s").c_str() : "modelled",
                      int8_gops > 0 ? (std::to_string(int(int8_gops)) + " GOP/s").c_str() : "modelled");
    } else {
        std::snprintf(speed, sizeof(speed), "timing modelled on measured 8700G figures (power mode %s, %.2f GHz)",
                      power_mode.c_str(), clock_hz / 1e9);
    }
    char buf[640];
    std::snprintf(buf, sizeof(buf),
                  "mode %s, %s, dispatch %.1f us (%.1f us when queued, %.0f us to switch designs), %d hardware contexts "
                  "(%d held elsewhere), heap %zu MiB, %d thread(s), fault %s",
                  mode_name(mode), speed, dispatch_us, queued_us, switch_us, hwctx_limit, other_contexts,
                  heap_bytes >> 20, threads, fault_name(fault));
    std::string s = buf;
    if (memlock_bytes != SIZE_MAX) s += ", locked-memory limit " + std::to_string(memlock_bytes >> 20) + " MiB";
    if (accum != accum::exact) s += std::string(", bf16 accumulation ") + accum_name(accum);
    s += driver == driver::intree ? ", in-tree driver (job timeout " + std::to_string(job_timeout_ms) + " ms)"
                                  : ", out-of-tree driver (TDR every " + std::to_string(tdr_ms) + " ms)";
    if (fault != fault::none) {
        s += " after " + std::to_string(fault_after) + " run(s), " +
             (fault_count ? std::to_string(fault_count) + " time(s)" : std::string("from then on"));
    }
    return s;
}

} // namespace xdna_emu
