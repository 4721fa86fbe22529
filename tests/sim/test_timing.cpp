// Timing of the scalar path: expectations are built from the named latency parameters, not magic numbers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/run.h"

namespace attnsim {
namespace {

const std::string kToy3 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/toy-3reg.yaml";

RunOptions options(std::vector<std::string> overrides) {
  RunOptions o;
  o.config_path = kToy3;
  o.overrides = std::move(overrides);
  return o;
}

// One of every scalar opcode, in a dependent order.
const char* kEveryOpcode = R"(
.tensor x[2] = {0.5, 2}
.tensor y[1]
LOAD x[0], R0
LOAD x[1], R1
MAC_Z R0, R1, R2
MAC R0, R1, R2, R2
MAX R0, R2, R2
SUB R2, R0, R2
EXP R2, R2
ADD R2, R1, R2
MUL R2, R1, R2
DIV R2, R1, R2
MOV R2, R0
STORE R0, y[0]
)";

TEST(BlockingIssue, CyclesAreTheSumOfPerOpcodeLatencies) {
  const int64_t load = 2, store = 3, mac = 4, max = 1, sub = 2, exp = 7, add = 1, mul = 3, div = 9, mov = 1;
  RunResult r = run_program(
      isa::assemble(kEveryOpcode, "every-opcode"),
      options({fmt::format("dram.load_latency={}", load), fmt::format("dram.store_latency={}", store),
               fmt::format("mac.latency={}", mac), fmt::format("alu.max_latency={}", max),
               fmt::format("alu.sub_latency={}", sub), fmt::format("alu.exp_latency={}", exp),
               fmt::format("alu.add_latency={}", add), fmt::format("alu.mul_latency={}", mul),
               fmt::format("alu.div_latency={}", div), fmt::format("alu.mov_latency={}", mov)}));
  const uint64_t expected = 2 * load + 2 * mac + max + sub + exp + add + mul + div + mov + store;
  EXPECT_EQ(r.cycles, expected);
  EXPECT_EQ(r.instructions, 12u);
  EXPECT_EQ(r.stats["stats"]["sequencer"]["stall_cycles"]["value"], 0);
}

// Independent LOADs rotate over three registers; with load latency <= 3 no write waits for an older one,
// so pipelined issue starts one per cycle and the last result lands `latency` cycles after its issue.
TEST(PipelinedIssue, IndependentLoadsIssueEveryCycle) {
  const int loads = 30;
  const int64_t latency = 3;
  std::string text = ".tensor x[30]\n";
  for (int i = 0; i < loads; ++i) text += fmt::format("LOAD x[{}], R{}\n", i, i % 3);
  RunResult r =
      run_program(isa::assemble(text, "loads"),
                  options({"sequencer.issue=pipelined", fmt::format("dram.load_latency={}", latency)}));
  EXPECT_EQ(r.cycles, static_cast<uint64_t>((loads - 1) + latency));
}

// A dependent chain cannot overlap: pipelined issue costs the same as blocking.
TEST(PipelinedIssue, DependentChainSerialises) {
  const int exps = 10;
  const int64_t load = 2, exp = 5;
  std::string text = ".tensor x[1]\nLOAD x[0], R0\n";
  for (int i = 0; i < exps; ++i) text += "EXP R0, R0\n";
  RunResult r = run_program(isa::assemble(text, "chain"),
                            options({"sequencer.issue=pipelined", fmt::format("dram.load_latency={}", load),
                                     fmt::format("alu.exp_latency={}", exp)}));
  EXPECT_EQ(r.cycles, static_cast<uint64_t>(load + exps * exp));
  // The first EXP waits for the load, each later one for the previous EXP; one issue slot of each wait
  // would have been used anyway.
  const uint64_t stalls = (load - 1) + (exps - 1) * (exp - 1);
  EXPECT_EQ(r.stats["stats"]["sequencer"]["stall_cycles"]["value"], stalls);
}

// Temporal decoupling must not change the count: with a one-cycle quantum the sequencer synchronises with
// the kernel at every instruction, with a huge one only at the end; both give the same cycles.
TEST(TemporalDecoupling, QuantumOfOneCycleSyncsEveryInstruction) {
  const int64_t exp = 3;
  RunResult r = run_program(isa::assemble(kEveryOpcode, "every-opcode"),
                            options({"sequencer.quantum_cycles=1", fmt::format("alu.exp_latency={}", exp)}));
  const uint64_t expected = 11 + exp;  // every other instruction costs one cycle on toy-3reg
  EXPECT_EQ(r.cycles, expected);
  // One sync per instruction after the first (which issues at cycle 0, when no time has passed) plus the
  // final one that covers the last instruction's latency.
  EXPECT_EQ(r.stats["stats"]["sequencer"]["kernel_syncs"]["value"], r.instructions);
}

TEST(TemporalDecoupling, LargeQuantumSyncsOnceWithTheSameCycles) {
  const int64_t exp = 3;
  RunResult r =
      run_program(isa::assemble(kEveryOpcode, "every-opcode"),
                  options({"sequencer.quantum_cycles=1000000", fmt::format("alu.exp_latency={}", exp)}));
  EXPECT_EQ(r.cycles, 11u + exp);
  EXPECT_EQ(r.stats["stats"]["sequencer"]["kernel_syncs"]["value"], 1);
}

// A machine runs several programs in one process; each run's counts are its own.
TEST(Machine, RunsProgramsBackToBack) {
  Machine machine(load_config(kToy3, {}));
  isa::Program first = isa::assemble(kEveryOpcode, "first");
  isa::Program second = isa::assemble(".tensor x[1] = {1}\nLOAD x[0], R0\nEXP R0, R0\n", "second");
  machine.load(first, false);
  machine.run();
  EXPECT_EQ(machine.sequencer().cycles(), 12u);
  machine.load(second, false);
  machine.run();
  EXPECT_EQ(machine.sequencer().cycles(), 2u);
  EXPECT_EQ(machine.sequencer().instructions(), 2u);
  EXPECT_EQ(machine.dram().reads, 1u);
  EXPECT_DOUBLE_EQ(machine.dram().read_tensor(0)[0], 1.0);
  EXPECT_NEAR(machine.regfile().values[0], std::exp(1.0), 1e-6);
}

}  // namespace
}  // namespace attnsim
