// Microbenchmarks of parts that are not in the plugin yet. Each is registered so that a run lists it and says why it
// has no number; none of them measures anything.
//
// PENDING(npu-worker): npu/host_feed_rate — the NPU worker's host feed rate: how many blocks per second the host
//   side prepares (weights from the converted cache, activations to bf16, buffer syncs, dispatch) with the emulator in
//   null mode (XDNA_EMU_MODE=null: no arithmetic, so only the host's work is timed). It needs the NPU worker
//   (src/workers/npu), which is not part of the plugin yet.
//
// Conversion throughput per weight type is measured by bench-convert (tools/bench-convert); scripts/microbench.sh
// runs it next to this program.
#include <benchmark/benchmark.h>

namespace xdna_microbench {

namespace {

void BM_npu_host_feed_rate(benchmark::State & state) {
    for (auto _ : state) {
        state.SkipWithError("not measured: needs the NPU worker, which the plugin does not have yet");
        break;
    }
}
BENCHMARK(BM_npu_host_feed_rate)->Name("npu/host_feed_rate");

}  // namespace

}  // namespace xdna_microbench
