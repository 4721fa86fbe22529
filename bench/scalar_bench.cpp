// Scalar-path speed: simulated instructions per second on a long straight-line trace (issue target:
// >= 50M/s on one core). One Machine per process; the program is re-run for each benchmark iteration.
#include <benchmark/benchmark.h>

#include "sim/machine.h"
#include "traces/scalar.h"

namespace attnsim {
namespace {

constexpr int64_t kElements = 750'000;  // online softmax: 14n - 4 instructions = 10.5M

void BM_ScalarOnlineSoftmax(benchmark::State& state) {
  static MachineConfig config =
      load_config(std::string(ATTNSIM_SOURCE_DIR) + "/configs/toy-4reg.yaml",
                  {state.range(0) ? "sequencer.issue=pipelined" : "sequencer.issue=blocking"});
  static Machine machine(config);
  traces::ScalarInputs in;
  in.n = kElements;
  static isa::Program program = traces::softmax_online(in);
  uint64_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    machine.load(program, false);
    state.ResumeTiming();
    machine.run();
    instructions += machine.sequencer().instructions();
  }
  state.counters["instructions"] = static_cast<double>(machine.sequencer().instructions());
  state.counters["cycles"] = static_cast<double>(machine.sequencer().cycles());
  state.counters["kernel_syncs"] = static_cast<double>(machine.sequencer().kernel_syncs());
  state.counters["sim_instr_per_s"] =
      benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate);
}

}  // namespace
}  // namespace attnsim

// Range(0): 0 = blocking issue (toy machine), 1 = pipelined issue with the scoreboard. One variant per
// process (SystemC elaborates once): select it with --benchmark_filter=.../0 or .../1.
BENCHMARK(attnsim::BM_ScalarOnlineSoftmax)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(5);

int sc_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
