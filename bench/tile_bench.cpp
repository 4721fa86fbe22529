// Tile-path speed: simulated tile instructions per second for FlashAttention-2 forward on the h100 preset
// in timing-only mode (issue target: >= 2M tile instructions/s, memory independent of the tensors' size).
// Arg: sequence length. One Machine per process; the program is re-run per iteration.
#include <benchmark/benchmark.h>

#include "sim/machine.h"
#include "traces/stream.h"
#include "traces/tile.h"

namespace attnsim {
namespace {

void BM_Flash2TimingOnly(benchmark::State& state) {
  static Machine machine(load_config(std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml", {}));
  traces::AttentionShape shape{
      .n = state.range(0), .d = 64, .block_q = 64, .block_k = 64, .double_buffer = true};
  // Streamed: generated on a worker thread while the simulator runs, so memory does not grow with n.
  uint64_t instructions = 0;
  for (auto _ : state) {
    isa::Program program = traces::stream_program([&] { return traces::flash2_forward(shape); });
    machine.load(program, false, true);
    machine.run();
    instructions += machine.sequencer().instructions();
  }
  state.counters["tile_instructions"] = static_cast<double>(machine.sequencer().instructions());
  state.counters["cycles"] = static_cast<double>(machine.sequencer().cycles());
  state.counters["tile_instr_per_s"] =
      benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate);
}

}  // namespace
}  // namespace attnsim

// n = 20480: 320 x 320 block pairs, 1.5M tile instructions; n = 65536: 15.7M. The time includes generating
// the program (on a second thread).
BENCHMARK(attnsim::BM_Flash2TimingOnly)
    ->Arg(65536)
    ->Arg(20480)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

int sc_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
