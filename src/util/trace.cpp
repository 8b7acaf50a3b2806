#include "util/trace.h"

#include "util/clock.h"
#include "util/own_file.h"

#include <cstdio>
#include <mutex>
#include <vector>

namespace xdna::trace {

namespace detail {
std::atomic<bool> enabled{ false };
}

namespace {

constexpr int    device_lane = 1000;        // the NPU's own lane, apart from the threads'
constexpr size_t max_events  = size_t(1) << 22;   // ~4M events, ~300 MB of JSON: a long run keeps its beginning

struct event {
    const char * name;
    std::string  detail;
    double       t0, t1;
    int64_t      value;
    int          lane;
};

struct state {
    std::mutex                 mu;
    std::string                path;
    double                     origin = 0.0;
    std::vector<event>         events;
    std::vector<std::string>   lane_names;   // by lane (threads), in order of first use
    bool                       written = false;

    ~state() { write(); }   // at exit, or when the plugin is unloaded

    void write();
};

state & st() {
    static state s;
    return s;
}

thread_local int my_lane = -1;

int lane_of_this_thread(state & s) {   // s.mu held
    if (my_lane < 0) {
        my_lane = (int) s.lane_names.size();
        s.lane_names.push_back("thread " + std::to_string(my_lane));
    }
    return my_lane;
}

std::string escaped(const std::string & v) {
    std::string out;
    for (char c : v) {
        if (c == '"' || c == '\\') out += '\\';
        if ((unsigned char) c < 0x20) continue;
        out += c;
    }
    return out;
}

constexpr const char * first_line = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";

void write_events(FILE * f, const std::vector<std::string> & lane_names, const std::vector<event> & events,
                  double origin);

void state::write() {
    if (path.empty() || written || events.empty()) return;
    written = true;
    // a trace this plugin wrote starts with its first line; any other file is left alone
    const auto own = [](const std::string & head) { return head.rfind(first_line, 0) == 0; };
    std::string why;
    const bool ok = replace_own_file(path, own, [&](FILE * f) {
        write_events(f, lane_names, events, origin);
        return ferror(f) == 0;
    }, &why);
    if (!ok) fprintf(stderr, "ggml-xdna: GGML_XDNA_TRACE=%s %s; no trace written\n", path.c_str(), why.c_str());
}

void write_events(FILE * f, const std::vector<std::string> & lane_names, const std::vector<event> & events,
                  double origin) {
    fputs(first_line, f);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"ggml-xdna\"}}");
    for (size_t i = 0; i < lane_names.size(); ++i) {
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":%zu,\"args\":{\"name\":\"%s\"}}", i,
                escaped(lane_names[i]).c_str());
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":%zu,\"args\":{\"sort_index\":%zu}}",
                i, i + 1);
    }
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"NPU (device)\"}}",
            device_lane);
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":0}}",
            device_lane);
    for (const event & e : events) {
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"name\":\"%s\",\"ts\":%.3f,\"dur\":%.3f", e.lane,
                escaped(e.name).c_str(), (e.t0 - origin) * 1e6, (e.t1 - e.t0) * 1e6);
        if (e.value >= 0 || !e.detail.empty()) {
            fprintf(f, ",\"args\":{");
            if (e.value >= 0) fprintf(f, "\"n\":%lld%s", (long long) e.value, e.detail.empty() ? "" : ",");
            if (!e.detail.empty()) fprintf(f, "\"what\":\"%s\"", escaped(e.detail).c_str());
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n]}\n");
}

void record(const char * name, double t0, double t1, int64_t value, const std::string & detail, bool device) {
    state & s = st();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.written) return;
    if (s.events.size() >= max_events) {
        detail::enabled.store(false);
        fprintf(stderr, "ggml-xdna: the trace is full (%zu events); later work is not recorded\n", max_events);
        return;
    }
    s.events.push_back({ name, detail, t0, t1, value, device ? device_lane : lane_of_this_thread(s) });
}

}  // namespace

void open(const std::string & path) {
    if (path.empty()) return;
    state & s = st();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.path.empty()) return;
    s.path   = path;
    s.origin = now_seconds();
    detail::enabled.store(true);
}

void close() {
    state & s = st();
    detail::enabled.store(false);
    std::lock_guard<std::mutex> lock(s.mu);
    s.write();
}

void name_thread(const char * name) {
    if (!on()) return;
    state & s = st();
    std::lock_guard<std::mutex> lock(s.mu);
    s.lane_names[lane_of_this_thread(s)] = name;
}

void add(const char * name, double t0, double t1, int64_t value, const std::string & detail) {
    if (on()) record(name, t0, t1, value, detail, false);
}

void add_device(const char * name, double t0, double t1) {
    if (on()) record(name, t0, t1, -1, {}, true);
}

scope::scope(const char * n, int64_t v) : name(n), value(v), t0(on() ? now_seconds() : 0.0) {}

scope::~scope() {
    if (on() && t0 > 0.0) record(name, t0, now_seconds(), value, {}, false);
}

}  // namespace xdna::trace
