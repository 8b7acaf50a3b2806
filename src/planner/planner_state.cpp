// What the auto split learned, as text and back (split_planner::save_state / load_state): one line per shape, the
// shape's key and decision, then each of its models (cost_model::save), separated by " | ". The backend keeps it in
// the planner state file (GGML_XDNA_PLANNER_STATE, backend/planner_file.cpp), so that the next process starts from it.
#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace xdna {

namespace {

// model[NPU], model[GPU], model[CPU], npu_fixed, cpu_alone, cpu_all, npu_whole, npu_head; a file of before the head
// start (npu_head) has the first seven
constexpr int n_models = 8, n_models_before_head = 7;

// the split's text into its fields
std::vector<std::string> split_fields(const std::string & line) {
    std::vector<std::string> out;
    size_t at = 0;
    for (size_t bar; (bar = line.find(" | ", at)) != std::string::npos; at = bar + 3) out.push_back(line.substr(at, bar - at));
    out.push_back(line.substr(at));
    return out;
}

}  // namespace

// What is kept of a shape is all it learned, as if the process had not ended, but for a decision to give the NPU
// every row or to hold a share that its neighbour's times won (near_npu_rows, whose tries are not kept either): that
// shape is written as undecided, and the next process decides it again from its models at its first multiply. Kept,
// a shape that went to every row once never measured a split again (the chain below); now a shape on every row
// measures a part again two multiplies after it went there (measured_npu_rows), and the NPU's measured time on every
// row (npu_whole) and its tries are kept, so that the next process does not try the whole again in its timed
// prompts. Left out, the whole was tried twice a shape in every process: on the 2-CPU VM at -t 1, emulated NPU at 350
// GFLOP/s, three of those multiplies in llama-bench's timed prompts cost 33-36 ms of their 354-372 (Q 6.8 ms on every
// row against 4.5-5 at its split, gate and up 19.2 against 12-14), and kept runs ran at 0.959-0.962 of share 0.5 over
// nine passes. The chain that left it out: -t 8 on 16 vCPUs, emulated NPU at 1,441 GFLOP/s, the NPU on 0.98, 1.0 and
// 1.0 of the rows in three processes each reading the last one's state, 0.934 of the best fixed share, where
// processes that started afresh gave it 0.80-0.87 and ran at 0.990.
std::string split_planner::save_state() const {
    std::lock_guard<std::mutex> lock(mtx);
    std::vector<std::string> lines;   // sorted: the same state gives the same text
    char buf[512];
    for (const auto & [k, st] : shapes) {
        // -1: the first multiply decides from the models (every row, or a share moved to by near_npu_rows' times)
        const int64_t cur = st.npu_cur == k.rows || st.near_won.on(st.calls) ? -1 : st.npu_cur;
        snprintf(buf, sizeof(buf), "shape %d %d %lld %lld %lld %lld %d %d %d %lld %lld %d %lld %.17g %.17g %lld %lld", k.op,
                 k.type, (long long) k.k, (long long) k.rows, (long long) k.tokens, (long long) k.experts,
                 (int) k.repacked, k.nodes, (int) k.per_call | ((int) k.ahead << 1), (long long) st.calls, (long long) cur, (int) st.npu_split, (long long) st.whole_tries,
                 st.hint.fixed_s, st.hint.launch_s, (long long) st.hint.block_rows,
                 (long long) st.hint.launches_per_block);
        std::string out = buf;
        for (int i = 0; i < launch_cost::max_wide; ++i) {   // the wider blocks: their rows and units
            snprintf(buf, sizeof(buf), " %lld %.17g", (long long) st.hint.wide_rows[i], st.hint.wide_units[i]);
            out += buf;
        }
        snprintf(buf, sizeof(buf), " %lld", (long long) st.hint.part_of);
        out += buf;
        for (const cost_model * m : { &st.model[NPU], &st.model[GPU], &st.model[CPU], &st.npu_fixed, &st.cpu_alone,
                                      &st.cpu_all, &st.npu_whole, &st.npu_head }) {
            out += " | " + m->save();
        }
        lines.push_back(out + "\n");
    }
    std::sort(lines.begin(), lines.end());
    std::string text;
    for (const std::string & l : lines) text += l;
    return text;
}

size_t split_planner::load_state(const std::string & text, std::string * why) {
    std::vector<std::pair<shape_key, shape_state>> read;
    std::istringstream in(text);
    std::string line;
    for (int no = 1; std::getline(in, line); ++no) {
        if (line.empty()) continue;
        const std::vector<std::string> f = split_fields(line);
        shape_key k;
        shape_state st;
        int repacked = 0, per_call = 0, split = 0, used = 0;
        long long kk, rows, tokens, experts, calls, cur, tries, block, lpb;
        long long wide[launch_cost::max_wide] = {};
        const int models = (int) f.size() - 1;
        bool head_ok =
            (models == n_models || models == n_models_before_head) &&
            sscanf(f[0].c_str(), "shape %d %d %lld %lld %lld %lld %d %d %d %lld %lld %d %lld %lf %lf %lld %lld%n", &k.op,
                   &k.type, &kk, &rows, &tokens, &experts, &repacked, &k.nodes, &per_call, &calls, &cur, &split, &tries,
                   &st.hint.fixed_s, &st.hint.launch_s, &block, &lpb, &used) == 17 && rows > 0 && kk > 0 &&
            tokens > 0 && experts > 0 && (k.nodes == 1 || k.nodes == 2) && per_call >= 0 && per_call <= 3 &&
            calls >= 0 && cur >= -1 && cur <= rows && tries >= 0 && block >= 0 && lpb >= 0;
        for (int i = 0, more = 0; head_ok && i < launch_cost::max_wide; ++i, used += more) {
            head_ok = sscanf(f[0].c_str() + used, " %lld %lf%n", &wide[i], &st.hint.wide_units[i], &more) == 2 &&
                      wide[i] >= 0 && std::isfinite(st.hint.wide_units[i]) && st.hint.wide_units[i] >= 0.0;
        }
        long long part_of = 0;
        int more = 0;
        head_ok = head_ok && sscanf(f[0].c_str() + used, " %lld%n", &part_of, &more) == 1 && part_of >= 0;
        head_ok = head_ok && used + more == (int) f[0].size();
        bool models_ok = head_ok;
        cost_model * ms[n_models] = { &st.model[NPU], &st.model[GPU], &st.model[CPU], &st.npu_fixed, &st.cpu_alone,
                                      &st.cpu_all, &st.npu_whole, &st.npu_head };
        for (int i = 0; models_ok && i < models; ++i) models_ok = ms[i]->load(f[1 + i]);
        if (!models_ok) {
            if (why) *why = "line " + std::to_string(no) + " is not a shape this planner wrote";
            return 0;
        }
        k.k = kk; k.rows = rows; k.tokens = tokens; k.experts = experts; k.repacked = repacked != 0;
        k.per_call = (per_call & 1) != 0; k.ahead = (per_call & 2) != 0;   // one field: weights per call, begun ahead
        // begun ahead, from before the head start was learned apart: its NPU model is another time (from the
        // multiply's turn on), not the NPU's own; learned afresh
        if (k.ahead && models == n_models_before_head) continue;
        st.calls = calls; st.npu_cur = cur; st.npu_split = split != 0; st.whole_tries = tries;
        st.hint.block_rows = block; st.hint.launches_per_block = lpb;
        for (int i = 0; i < launch_cost::max_wide; ++i) st.hint.wide_rows[i] = wide[i];
        st.hint.part_of = part_of;
        read.emplace_back(k, st);
    }
    std::lock_guard<std::mutex> lock(mtx);
    size_t n = 0;
    for (auto & [k, st] : read) n += shapes.emplace(k, st).second;   // a shape already learned in this process stays
    return n;
}

}  // namespace xdna
