// The tile machine end to end: seed 003's MXU figures, timing-only equivalence, DMA/compute overlap,
// the HBM ledger of the FlashAttention-2 order against its closed form, SRAM capacity errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/run.h"
#include "traces/stream.h"
#include "traces/tile.h"

namespace attnsim {
namespace {

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";

RunOptions on(const std::string& config, std::vector<std::string> overrides = {}) {
  RunOptions o;
  o.config_path = kConfigs + config + ".yaml";
  o.overrides = std::move(overrides);
  return o;
}

uint64_t mxu_busy(const RunResult& r) {
  return r.stats["stats"]["mxu"]["busy_cycles"]["value"].get<uint64_t>();
}

// Seed 003's accounting: one array, M + K + N - 2 cycles per matmul whatever its size.
RunResult seed003(const isa::Program& program) {
  return run_program(program, on("tpu-v5e-like", {"mxu.accounting=ideal", "mxu.arrays=1"}));
}

// Seed 003's table, n = 512, d = 64, causal: the number of unmasked tiles and two matmuls per tile
// (Q K^T: b x d x b, then P V: b x b x d), each M + K + N - 2.
uint64_t seed003_flash_cycles(int64_t n, int64_t d, int64_t block) {
  const int64_t tiles_per_side = n / block;
  const int64_t unmasked = tiles_per_side * (tiles_per_side + 1) / 2;
  const int64_t per_matmul = block + d + block - 2;
  return static_cast<uint64_t>(unmasked * 2 * per_matmul);
}

TEST(Seed003, FlashBlock64MxuCycles) {
  traces::AttentionShape s{.n = 512, .d = 64, .block_q = 64, .block_k = 64, .causal = true};
  RunResult r = seed003(traces::flash2_forward(s));
  EXPECT_EQ(mxu_busy(r), seed003_flash_cycles(512, 64, 64));
  EXPECT_EQ(mxu_busy(r), 13680u);  // the figure printed in seed 003
  EXPECT_TRUE(r.checks_passed());
}

TEST(Seed003, FlashBlock128MxuCycles) {
  traces::AttentionShape s{.n = 512, .d = 64, .block_q = 128, .block_k = 128, .causal = true};
  RunResult r = seed003(traces::flash2_forward(s));
  EXPECT_EQ(mxu_busy(r), seed003_flash_cycles(512, 64, 128));
  EXPECT_EQ(mxu_busy(r), 6360u);
  EXPECT_TRUE(r.checks_passed());
}

TEST(Seed003, StandardMxuCycles) {
  traces::AttentionShape s{.n = 512, .d = 64, .causal = true};
  RunResult r = seed003(traces::standard_attention_on_chip(s));
  const uint64_t qk = 512 + 64 + 512 - 2, pv = 512 + 512 + 64 - 2;
  EXPECT_EQ(mxu_busy(r), qk + pv);
  EXPECT_EQ(mxu_busy(r), 2172u);
  EXPECT_TRUE(r.checks_passed());
}

// Timing-only keeps no values but must count and time exactly as the value mode does.
TEST(TimingOnly, SameCyclesAndCountsAsValueMode) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {}));
  traces::AttentionShape s{
      .n = 200, .d = 32, .block_q = 64, .block_k = 32, .causal = true, .double_buffer = true};
  isa::Program program = traces::flash2_forward(s);
  machine.load(program, false, false);
  machine.run();
  const uint64_t cycles = machine.sequencer().cycles();
  const auto opcodes = machine.sequencer().per_opcode();
  const auto read = machine.hbm()->bytes_read_per_tensor;
  const auto written = machine.hbm()->bytes_written_per_tensor;
  const uint64_t mxu = machine.mxu()->busy_cycles;
  EXPECT_FALSE(machine.sequencer().tensor_values(3).empty());
  machine.load(program, false, true);
  machine.run();
  EXPECT_EQ(machine.sequencer().cycles(), cycles);
  EXPECT_EQ(machine.sequencer().per_opcode(), opcodes);
  EXPECT_EQ(machine.hbm()->bytes_read_per_tensor, read);
  EXPECT_EQ(machine.hbm()->bytes_written_per_tensor, written);
  EXPECT_EQ(machine.mxu()->busy_cycles, mxu);
  EXPECT_TRUE(machine.sequencer().tensor_values(3).empty());
}

// mma.sync's operand path: every warp ldmatrix-loads the operand all the warps need, so SRAM sends it once
// per working array (shared_operand: per_array), where wgmma's tensor cores share one read (once). A
// 64 x 64 x 64 product from SRAM on h100-sm (four 16 x 32 arrays, a 128 B/clk port): dealt by M, B goes to
// all four arrays, 8 KB + 4 x 8 KB = 40 KB, 320 port cycles, longer than the arrays' 236; dealt by N, A
// does; rows dealt to fewer arrays than there are reach only those.
struct Product {
  uint64_t sram_read, cycles, mxu_busy;
};

// One machine for every feed (one SystemC simulation per process; loading a program resets the counts).
Product product(Machine& machine, int64_t m, const MxuUnit::Feed& feed) {
  const std::string rows = std::to_string(m);
  const isa::Program program =
      isa::assemble(".buffer A[" + rows + "][64] f16\n.buffer B[64][64] f16\n.buffer C[" + rows +
                        "][64] f32 regs\nMAC_Z A, B, C\n",
                    "product.trace");
  machine.set_mxu_feed(feed);
  machine.load(program, false, true);
  machine.run();
  return {machine.sram()->bytes_read, machine.sequencer().cycles(), machine.mxu()->busy_cycles};
}

TEST(SharedOperand, EachWorkingArrayReadsTheOperandTheyAllNeed) {
  constexpr uint64_t kTile = 64 * 64 * 2;
  using Feed = MxuUnit::Feed;
  constexpr auto kTile_ = mxu::HandOff::kTile;
  constexpr auto kPerArray = MxuUnit::SharedOperand::kPerArray;
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {}));
  const Product once = product(machine, 64, Feed{kTile_, MxuUnit::Deal::kM, MxuUnit::SharedOperand::kOnce});
  EXPECT_EQ(once.sram_read, 2 * kTile);
  EXPECT_EQ(once.cycles, once.mxu_busy);
  const Product per_array = product(machine, 64, Feed{kTile_, MxuUnit::Deal::kM, kPerArray});
  EXPECT_EQ(per_array.sram_read, kTile + 4 * kTile);
  EXPECT_EQ(per_array.cycles, 5 * kTile / 128);
  EXPECT_GT(per_array.cycles, per_array.mxu_busy);
  EXPECT_EQ(product(machine, 64, Feed{kTile_, MxuUnit::Deal::kN, kPerArray}).sram_read, 4 * kTile + kTile);
  // Two rows dealt to four arrays: two of them work, and read B.
  EXPECT_EQ(product(machine, 2, Feed{kTile_, MxuUnit::Deal::kM, kPerArray}).sram_read,
            2 * 64 * 2 + 2 * kTile);
}

// A result latency delays the instructions that read the result, not the unit: two dependent EXPs take
// exactly the latency longer than two independent ones, and nothing changes without it. The same for the
// MXU's result_latency with two MACs.
uint64_t cycles_of(Machine& machine, const std::string& body) {
  const isa::Program program = isa::assemble(
      ".tensor X[16][16] f32 random(seed=1, lo=-1, hi=1)\n.buffer A[16][16] f32\n.buffer B[16][16] f32\n"
      ".buffer C[16][16] f32\nLOAD X[0:16, 0:16], A\n" +
          body,
      "latency.trace");
  machine.load(program, false, true);
  machine.run();
  return machine.sequencer().cycles();
}

TEST(ResultLatency, DependentInstructionsWaitForItAndTheUnitDoesNot) {
  Machine machine(
      load_config(kConfigs + "h100-sm.yaml", {"vpu.exp_result_latency=50", "mxu.result_latency=70"}));
  const uint64_t exp_dependent = cycles_of(machine, "EXP A, B\nEXP B, C\n");
  const uint64_t exp_independent = cycles_of(machine, "EXP A, B\nEXP A, C\n");
  EXPECT_EQ(exp_dependent, exp_independent + 50);
  const uint64_t mac_dependent = cycles_of(machine, "MAC_Z A, A, B\nMAC_Z B, A, C\n");
  const uint64_t mac_independent = cycles_of(machine, "MAC_Z A, A, B\nMAC_Z A, A, C\n");
  EXPECT_EQ(mac_dependent, mac_independent + 70);
}

// A row reduction's result latency grows with the reduced row: `reduction_result_latency_per_column` adds
// that much per column. Two reductions of one vector each (8 rows of 16, 16 rows of 8), each read at once
// by a SUB of one vector: the 16-column one's reader waits 2 x 8 cycles longer. Other ops do not grow.
TEST(ResultLatency, ARowReductionGrowsWithItsRow) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml",
                              {"vpu.rowsum_result_latency=10", "vpu.reduction_result_latency_per_column=2",
                               "vpu.exp_result_latency=50"}));
  const uint64_t sixteen_columns =
      cycles_of(machine, ".buffer R[8][1] f32\nROWSUM A[0:8, 0:16], R\nSUB A[0:8, 0:16], R, B[0:8, 0:16]\n");
  const uint64_t eight_columns =
      cycles_of(machine, ".buffer R[16][1] f32\nROWSUM A[0:16, 0:8], R\nSUB A[0:16, 0:8], R, B[0:16, 0:8]\n");
  EXPECT_EQ(sixteen_columns, eight_columns + 2 * 8);
  const uint64_t exp_dependent = cycles_of(machine, "EXP A, B\nEXP B, C\n");
  const uint64_t exp_independent = cycles_of(machine, "EXP A, B\nEXP A, C\n");
  EXPECT_EQ(exp_dependent, exp_independent + 50);
}

// vpu.sfu_pipe and vpu.chaining (off in the presets). A SUB (the FMA pipe: one vector a cycle) feeds an
// EXP (8 cycles a vector) on 64 x 128 tiles in the tile register file (no SRAM traffic), the schedulers'
// limit off: 64 vectors, SUB 64 cycles, EXP 512, each result 10 cycles after its last vector. When each
// starts, from the run's timeline: the EXP waits for the SUB's result unless it chains onto its first
// vector, and chaining gains the SUB's length only when the EXP runs on a pipe of its own.
std::map<std::string, uint64_t> starts_of(const std::vector<std::string>& options) {
  const isa::Program program = isa::assemble(
      ".tensor X[64][128] f32 random(seed=1, lo=-1, hi=1)\n.tensor Y[64][1] f32\n.buffer A[64][128] f32\n"
      ".buffer Ar[64][128] f32 regs\n.buffer Br[64][128] f32 regs\n.buffer Cr[64][128] f32 regs\n"
      ".buffer s[64][1] f32 regs\n.buffer Ys[64][1] f32\nLOAD X[0:64, 0:128], A\nMOV A, Ar\n"
      "ROWMAX Ar, s\nSUB Ar, s, Br\nEXP Br, Cr\nMOV s, Ys\nSTORE Ys, Y[0:64, 0:1]\n",
      "chain.trace");
  std::vector<std::string> overrides = {"issue.limit=false",           "vpu.sub_latency=0",
                                        "vpu.sub_cycles_per_vector=1", "vpu.sub_result_latency=10",
                                        "vpu.exp_latency=0",           "vpu.exp_cycles_per_vector=8",
                                        "vpu.exp_result_latency=10"};
  overrides.insert(overrides.end(), options.begin(), options.end());
  RunOptions o = on("h100-sm", overrides);
  // One file a test: ctest runs these tests side by side, and a shared name let one read another's file.
  o.timeline = ::testing::TempDir() + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
               "_chain_timeline.json";
  run_program(program, o);
  std::ifstream in(o.timeline);
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::map<std::string, uint64_t> starts;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && (e["name"] == "SUB" || e["name"] == "EXP")) starts[e["name"]] = e["ts"];
  std::filesystem::remove(o.timeline);
  return starts;
}

// One run a test (a process holds one SystemC machine).
TEST(VectorPipes, WithoutEitherTheExpWaitsForTheSubsResult) {
  auto s = starts_of({});
  EXPECT_EQ(s["EXP"], s["SUB"] + 64 + 10);  // the SUB's last vector and its result latency
}

TEST(VectorPipes, ChainedOnOnePipeTheExpWaitsOnlyForThePipe) {
  auto s = starts_of({"vpu.chaining=true"});  // may start on the SUB's first vector; the pipe is the SUB's
  EXPECT_EQ(s["EXP"], s["SUB"] + 64);
}

TEST(VectorPipes, ChainedOnItsOwnPipeTheExpStartsOnTheFirstVector) {
  auto s = starts_of({"vpu.chaining=true", "vpu.sfu_pipe=true"});
  EXPECT_EQ(s["EXP"], s["SUB"] + 1 + 10);  // the SUB's first vector and its result latency
}

TEST(VectorPipes, OnItsOwnPipeUnchainedTheExpStillWaitsForTheResult) {
  auto s = starts_of({"vpu.sfu_pipe=true"});
  EXPECT_EQ(s["EXP"], s["SUB"] + 64 + 10);
}

// The warp schedulers: a tile instruction is done when its last warp instruction has issued, or its unit
// is through, whichever is later. A 16 x 16 tile is one warp, a thread holding 2 rows x 4 columns: an EXP
// is 8 x 4 = 32 warp instructions, 32 cycles on one scheduler, where the VPU takes 2 vectors x 8 cycles
// and the SRAM port 2 KB / 128 B; a MUL is 8 instructions, and its SRAM traffic binds (B read twice, C
// written: 3 KB, 24 cycles).
TEST(Issue, AnInstructionIsDoneWhenItsWarpInstructionsHaveIssued) {
  Machine machine(
      load_config(kConfigs + "h100-sm.yaml",
                  {"issue.type=warp_schedulers", "issue.schedulers=1", "vpu.lanes=128", "vpu.exp_latency=0",
                   "vpu.exp_cycles_per_vector=8", "vpu.exp_result_latency=0", "vpu.mul_latency=0",
                   "vpu.mul_cycles_per_vector=8", "vpu.mul_result_latency=0"}));
  const uint64_t one_exp = cycles_of(machine, "EXP A, B\n");
  EXPECT_EQ(cycles_of(machine, "EXP A, B\nEXP B, C\n"), one_exp + 32);
  EXPECT_EQ(machine.issue()->warp_instructions, 2u + 64u);  // the LOAD's 1 KB: two 512-byte copies
  EXPECT_EQ(cycles_of(machine, "EXP A, B\nMUL B, B, C\n"), one_exp + 24);
}

// An SM whose ops between registers and SRAM access shared memory: 4 bytes a thread, 2 address instructions
// each. The warp instructions of `body` after a LOAD of X into A (SRAM); B is SRAM too, R and T registers.
const std::vector<std::string> kSharedAccess = {"issue.type=warp_schedulers", "issue.shared_access_bytes=4",
                                                "issue.address_per_shared=2"};
uint64_t instructions_after_load(Machine& machine, const std::string& body) {
  const isa::Program program = isa::assemble(
      ".tensor X[16][16] f32 random(seed=1, lo=-1, hi=1)\n.buffer A[16][16] f32\n.buffer B[16][16] f32\n"
      ".buffer R[16][16] f32 regs\n.buffer T[16][16] f32 regs\nLOAD X[0:16, 0:16], A\n" +
          body,
      "shared.trace");
  machine.load(program, false, true);
  machine.run();
  return machine.issue()->warp_instructions;
}

// An op between the register file and SRAM reaches the SRAM tile through shared-memory accesses; ops
// wholly in SRAM (the model's SRAM-held programs) or wholly in registers do not. A 16 x 16 f32 tile is one
// warp, a thread holding 2 rows x 4 columns: 32 bytes, 8 accesses of 4 bytes, each with 2 address
// instructions: a MOV from A (SRAM) into R (registers) costs 24 more than one from A into B.
TEST(Issue, AnOpBetweenRegistersAndSramAccessesSharedMemory) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", kSharedAccess));
  auto instructions = [&](const std::string& body) { return instructions_after_load(machine, body); };
  const uint64_t sram_only = instructions("MOV A, B\n");
  EXPECT_EQ(instructions("MOV A, R\n"), sram_only + 24);
  EXPECT_EQ(instructions("MOV R, A\n"), sram_only + 24);  // the store side costs the same
  const uint64_t mov = sram_only - instructions("");      // the MOV's own, without the LOAD's copies
  EXPECT_EQ(instructions("MOV A, R\nMOV R, T\n"), sram_only + 24 + mov);  // registers to registers: none
}

// An SRAM tile an element-wise op wrote from registers (P and dS, stored for a product) stays in the
// threads' registers: an element-wise op that reads it next loads nothing from shared memory (the
// backward's dS = P o (dP - D) reads P from the registers that computed it). Once the DMA has written the
// tile again, reading it costs its 24 accesses and addresses as before.
TEST(Issue, AnSramTileWrittenFromRegistersIsReadFromTheThreadsCopy) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", kSharedAccess));
  auto instructions = [&](const std::string& body) { return instructions_after_load(machine, body); };
  const uint64_t load = instructions("");
  const uint64_t store = instructions("MOV R, A\n");  // st.shared: 8 accesses and their addresses
  const uint64_t mov = instructions("MOV R, T\n") - load;
  EXPECT_EQ(store, load + mov + 24);
  EXPECT_EQ(instructions("MOV R, A\nMOV A, T\n"), store + mov);
  EXPECT_EQ(instructions("MOV R, A\nLOAD X[0:16, 0:16], A\nMOV A, T\n"), store + load + mov + 24);
}

// A product's A operand its own warps wrote from registers (dS, which the backward kernels feed to
// dQ_i += dS K_j from the registers that computed it) costs no ldmatrix: a 16 x 16 f32 A is 1 KB, two
// ldmatrix of 512 bytes with 2 address instructions each. Read transposed, its fragments are other
// threads': they are loaded, as from a tile the DMA wrote.
TEST(Issue, AProductReadsAnATileItsWarpsWroteFromTheirRegisters) {
  std::vector<std::string> keys = kSharedAccess;
  keys.push_back("issue.address_per_ldmatrix=2");
  Machine machine(load_config(kConfigs + "h100-sm.yaml", keys));
  auto instructions = [&](const std::string& body) { return instructions_after_load(machine, body); };
  const uint64_t load = instructions("");
  const uint64_t store = instructions("MOV R, A\n");
  const uint64_t product = instructions("MAC_Z A, B, T\n") - load;
  const uint64_t transposed = instructions("MAC_Z A^T, B, T\n") - load;
  EXPECT_EQ(instructions("MOV R, A\nMAC_Z A, B, T\n"), store + product - 2 * (1 + 2));
  EXPECT_EQ(instructions("MOV R, A\nMAC_Z A^T, B, T\n"), store + transposed);
}

// A 16-bit tile moved from SRAM into 16-bit registers is an mma operand's fragments (Q_i, which the kernels
// load once before their key loop): ldmatrix, as a product loads its A, not element-wise accesses. 16 x 16
// f16 is 512 bytes: the LOAD's one copy, then one ldmatrix with its 2 address instructions and 5 for the
// warp; element-wise it would be 8 accesses of 4 bytes with theirs, and a move per element.
TEST(Issue, AnOperandsFragmentsLoadFromSramAsLdmatrix) {
  Machine machine(
      load_config(kConfigs + "h100-sm.yaml",
                  {"issue.type=warp_schedulers", "issue.address_per_ldmatrix=2", "issue.fixed_per_warp=5",
                   "issue.shared_access_bytes=4", "issue.address_per_shared=2"}));
  const isa::Program program = isa::assemble(
      ".tensor X[16][16] f16 random(seed=1, lo=-1, hi=1)\n.buffer A[16][16] f16\n"
      ".buffer F[16][16] f16 regs\nLOAD X[0:16, 0:16], A\nMOV A, F\n",
      "fragments.trace");
  machine.load(program, false, true);
  machine.run();
  EXPECT_EQ(machine.issue()->warp_instructions, 1u + 3u + 5u);
}

// A product yields to the other instructions the schedulers issue while it works: each costs its tensor
// cores mma_cycles_per_other_instruction cycles, spread over the schedulers. Four independent 64 x 64 x 64
// products in one group keep the MXU busy; an EXP of a 16 x 16 tile of the first one's result (32 warp
// instructions) in another group issues while they work, and a fifth product follows it. At 4 cycles
// each over 4 schedulers the EXP moves the MXU's free time, so the fifth product's end, by 32 cycles;
// without the yield it costs them nothing.
TEST(Issue, AProductYieldsToInstructionsIssuedBesideIt) {
  const std::string products =
      ".buffer P[64][64] f32\n.buffer Q[64][64] f32\n.buffer R[64][64] f32\n.buffer S[64][64] f32\n"
      ".buffer T[64][64] f32\n.buffer U[64][64] f32\nLOAD X[0:16, 0:16], P[0:16, 0:16]\n.group 1\n"
      "MAC_Z P, P, Q\nMAC_Z P, P, R\nMAC_Z P, P, S\nMAC_Z P, P, T\n.group 2\n";
  const std::string exp = "EXP Q[0:16, 0:16], B\n", fifth = "MAC_Z P, P, U\n";
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {"issue.type=warp_schedulers", "issue.schedulers=4",
                                                          "vpu.exp_result_latency=0"}));
  auto cycles_with = [&](double cost, const std::string& program) {
    machine.issue()->set_limits(true, false, cost);
    return cycles_of(machine, program);
  };
  EXPECT_EQ(cycles_with(0, products + exp + fifth), cycles_with(0, products + fifth));
  EXPECT_EQ(cycles_with(4, products + exp + fifth), cycles_with(4, products + fifth) + 32);
}

// Instruction groups issue in order each, not with each other: an instruction that waits for its source's
// result latency holds back the rest of its group only. Two dependent EXPs and two dependent MAC_Zs: in
// one group the MACs start after the second EXP has issued; in groups of their own the two chains run
// side by side and the program takes as long as the longer one alone. (A unit still takes instructions in
// program order: the program's interleaving is each unit's schedule.)
TEST(InstructionGroups, AGroupWaitsAloneForItsOperands) {
  Machine machine(
      load_config(kConfigs + "h100-sm.yaml", {"vpu.exp_result_latency=300", "mxu.result_latency=300"}));
  const std::string d = ".buffer D[16][16] f32\n";
  const std::string exps = "EXP A, B\nEXP B, C\n";
  const std::string macs = "MAC_Z A, A, D\nMAC_Z D, A, D\n";
  const uint64_t one_group = cycles_of(machine, d + exps + macs);
  const uint64_t two_groups = cycles_of(machine, d + ".group 1\n" + exps + ".group 2\n" + macs);
  const uint64_t exps_alone = cycles_of(machine, d + exps);
  const uint64_t macs_alone = cycles_of(machine, d + macs);
  EXPECT_GT(one_group, std::max(exps_alone, macs_alone));
  EXPECT_EQ(two_groups, std::max(exps_alone, macs_alone));
}

// A streamed program (generated on a worker thread, delivered in small chunks) runs exactly like the same
// program held in memory, values included.
TEST(Streaming, SameResultsAsTheProgramInMemory) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {"dtype=f32"}));
  traces::AttentionShape s{.n = 300,
                           .d = 32,
                           .block_q = 64,
                           .block_k = 48,
                           .causal = true,
                           .double_buffer = true,
                           .dtype = Dtype::F32};
  isa::Program in_memory = traces::flash2_forward(s);
  machine.load(in_memory, false, false);
  machine.run();
  const uint64_t cycles = machine.sequencer().cycles();
  const auto opcodes = machine.sequencer().per_opcode();
  const auto read = machine.hbm()->bytes_read_per_tensor;
  const std::vector<double> output = machine.sequencer().tensor_values(3);
  const size_t small_chunks = 7;  // far below the program's length, so many hand-offs happen
  isa::Program streamed = traces::stream_program([&] { return traces::flash2_forward(s); }, small_chunks);
  EXPECT_TRUE(streamed.instructions.empty());
  EXPECT_EQ(streamed.tensors.size(), in_memory.tensors.size());
  machine.load(streamed, false, false);
  machine.run();
  EXPECT_EQ(machine.sequencer().cycles(), cycles);
  EXPECT_EQ(machine.sequencer().per_opcode(), opcodes);
  EXPECT_EQ(machine.hbm()->bytes_read_per_tensor, read);
  EXPECT_EQ(machine.sequencer().tensor_values(3), output);
}

// A source that is another view of the destination's buffer must be read before it is overwritten:
// S - S[:, 0] with S = [[1, 2], [3, 4]] is [[0, 1], [0, 1]].
TEST(TileValues, OverlappingViewsOfOneBufferReadTheirOldValues) {
  const char* text = R"(
.tensor x[2][2] f32 = {1, 2, 3, 4}
.tensor y[2][2] f32
.buffer S[2][2] f32
LOAD x[0:2, 0:2], S
SUB S, S[0:2, 0:1], S
STORE S, y[0:2, 0:2]
)";
  RunResult r = run_program(isa::assemble(text, "overlap"), on("h100-sm"));
  EXPECT_EQ(r.final_values.at("y"), (std::vector<double>{0, 1, 0, 1}));
}

// The timeline has one slice per instruction, on its unit's track; slices on one track never overlap, so
// overlapping DMA transfers need extra tracks.
TEST(Timeline, OneSlicePerInstructionAndNoOverlapWithinATrack) {
  traces::AttentionShape s{.n = 256, .d = 64, .block_q = 64, .block_k = 64, .double_buffer = true};
  isa::Program program = traces::flash2_forward(s);
  RunOptions o = on("h100-sm");
  o.timing_only = true;
  o.timeline = ::testing::TempDir() + "timeline.json";
  RunResult r = run_program(program, o);
  std::ifstream in(o.timeline);
  nlohmann::json doc = nlohmann::json::parse(in);
  std::map<int, std::string> track_name;
  std::map<int, std::vector<std::pair<uint64_t, uint64_t>>> track_slices;
  std::map<std::string, uint64_t> per_opcode;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M") track_name[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    const uint64_t ts = e["ts"], dur = e["dur"];
    track_slices[e["tid"].get<int>()].push_back({ts, ts + dur});
    ++per_opcode[e["name"]];
  }
  EXPECT_EQ(per_opcode, r.per_opcode);
  int dma_tracks = 0;
  for (auto& [tid, slices] : track_slices) {
    dma_tracks += track_name[tid].rfind("dma", 0) == 0;
    std::sort(slices.begin(), slices.end());
    for (size_t i = 1; i < slices.size(); ++i)
      EXPECT_LE(slices[i - 1].second, slices[i].first) << track_name[tid];
  }
  EXPECT_GT(dma_tracks, 1);  // K and V (and the prefetch) are in flight together
  std::filesystem::remove(o.timeline);
}

// Prefetching the next K/V block into a second buffer lets the DMA run under the MXU/VPU work: fewer
// cycles for the same bytes.
TEST(DoubleBuffering, OverlapsTransfersWithCompute) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {}));
  traces::AttentionShape s{.n = 1024, .d = 64, .block_q = 64, .block_k = 64};
  const isa::Program single_buffered = traces::flash2_forward(s);
  machine.load(single_buffered, false, true);
  machine.run();
  const uint64_t single = machine.sequencer().cycles();
  const auto bytes = machine.hbm()->bytes_read_per_tensor;
  s.double_buffer = true;
  const isa::Program double_buffered = traces::flash2_forward(s);
  machine.load(double_buffered, false, true);
  machine.run();
  EXPECT_LT(machine.sequencer().cycles(), single);
  EXPECT_EQ(machine.hbm()->bytes_read_per_tensor, bytes);
}

// FlashAttention-2 order: Q and O move once, K and V once per query block; with ragged n the last
// blocks are partial. Bytes = rows x d x element size.
TEST(Flash2Ledger, RaggedNonCausalMatchesClosedForm) {
  const int64_t n = 1000, d = 64, br = 64, bc = 48, elem = 2;  // f16
  traces::AttentionShape s{.n = n, .d = d, .block_q = br, .block_k = bc};
  RunResult r = run_program(traces::flash2_forward(s), on("h100-sm"));
  const int64_t query_blocks = (n + br - 1) / br;
  EXPECT_EQ(r.hbm_bytes_read.at("Q"), static_cast<uint64_t>(n * d * elem));
  EXPECT_EQ(r.hbm_bytes_read.at("K"), static_cast<uint64_t>(query_blocks * n * d * elem));
  EXPECT_EQ(r.hbm_bytes_read.at("V"), static_cast<uint64_t>(query_blocks * n * d * elem));
  EXPECT_EQ(r.hbm_bytes_written.at("O"), static_cast<uint64_t>(n * d * elem));
  EXPECT_EQ(r.hbm_bytes_read.at("O"), 0u);
  EXPECT_TRUE(r.checks_passed()) << r.checks[0].max_rel_error;
}

// Causal: query block i (rows [i*br, min(n, (i+1)*br))) reads the key blocks that start before its last
// row; the last of them may be partial.
TEST(Flash2Ledger, RaggedCausalMatchesClosedForm) {
  const int64_t n = 1000, d = 64, br = 64, bc = 48, elem = 2;
  traces::AttentionShape s{.n = n, .d = d, .block_q = br, .block_k = bc, .causal = true};
  RunResult r = run_program(traces::flash2_forward(s), on("h100-sm"));
  int64_t key_rows = 0;
  for (int64_t q0 = 0; q0 < n; q0 += br) {
    const int64_t last_row = std::min(n, q0 + br) - 1;
    for (int64_t k0 = 0; k0 <= last_row; k0 += bc) key_rows += std::min(bc, n - k0);
  }
  EXPECT_EQ(r.hbm_bytes_read.at("K"), static_cast<uint64_t>(key_rows * d * elem));
  EXPECT_EQ(r.hbm_bytes_read.at("V"), static_cast<uint64_t>(key_rows * d * elem));
  EXPECT_EQ(r.hbm_bytes_read.at("Q"), static_cast<uint64_t>(n * d * elem));
  EXPECT_EQ(r.hbm_bytes_written.at("O"), static_cast<uint64_t>(n * d * elem));
  EXPECT_TRUE(r.checks_passed()) << r.checks[0].max_rel_error;
}

// Results do not depend on the block size: in f32 every tiling matches the float64 reference closely
// (one process per block size, as SystemC elaborates once).
class Flash2Blocks : public ::testing::TestWithParam<int64_t> {};

TEST_P(Flash2Blocks, MatchesReferenceInF32) {
  const int64_t block = GetParam();
  traces::AttentionShape s{
      .n = 130, .d = 32, .block_q = block, .block_k = block, .causal = true, .dtype = Dtype::F32};
  RunResult r = run_program(traces::flash2_forward(s), on("h100-sm", {"dtype=f32"}));
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_LT(r.checks[0].max_rel_error, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Blocks, Flash2Blocks, ::testing::Values(16, 40, 64, 128, 130));

TEST(SramCapacity, OverCapacityNamesEveryBuffer) {
  traces::AttentionShape s{.n = 1024, .d = 128, .block_q = 256, .block_k = 256};
  try {
    run_program(traces::flash2_forward(s), on("h100-sm"));
    FAIL() << "the buffers cannot fit in 227 KB";
  } catch (const InputError& e) {
    const std::string message = e.what();
    for (const char* buffer : {"Qi", "Kj", "Vj", "S", "P", "Oi"})
      EXPECT_NE(message.find(buffer), std::string::npos) << buffer << " missing from: " << message;
    EXPECT_NE(message.find("232448"), std::string::npos) << message;  // the h100 preset's capacity
  }
}

// ---- STORE_ADD: memory tile += buffer, atomically ----

// One program on an already built single-core machine (a process elaborates SystemC once, so tests that
// compare programs run them on one machine): cycles, instructions, HBM bytes and final values by tensor.
struct Ran {
  uint64_t cycles = 0, instructions = 0;
  std::map<std::string, uint64_t> read, written;
  std::map<std::string, std::vector<double>> values;
};

Ran run_on(Machine& machine, const std::string& text) {
  const isa::Program p = isa::assemble(text, "store_add");
  machine.load(p, false, false);
  machine.run();
  Ran r;
  r.cycles = machine.sequencer().cycles();
  r.instructions = machine.sequencer().instructions();
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const std::string& name = p.tensors[t].name;
    r.read[name] = machine.hbm()->bytes_read_per_tensor[t];
    r.written[name] = machine.hbm()->bytes_written_per_tensor[t];
    r.values[name] = machine.sequencer().tensor_values(static_cast<int>(t));
  }
  return r;
}

// On the toy tile machine (f32, HBM 16 B/cycle + 10 cycles, one DMA transfer at a time, blocking issue):
// the slice is added into twice, the rest of the tensor untouched; each STORE_ADD reads and writes the
// 32-byte tile (the HBM ledger counts both) and takes a STORE's time plus the read's data time, 32 B at
// 16 B/cycle: its write follows the read on the one channel, their latencies overlap.
TEST(StoreAdd, AddsTheBufferIntoTheSliceAndMovesItBothWays) {
  Machine machine(load_config(kConfigs + "toy-tile.yaml", {}));
  const std::string head = R"(
.tensor x[2][4] f32 = {1, 2, 3, 4, 5, 6, 7, 8}
.tensor y[3][4] f32 = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120}
.buffer a[2][4] f32
LOAD x[0:2, 0:4], a
)";
  auto twice = [&](const std::string& op) {
    return head + op + " a, y[1:3, 0:4]\n" + op + " a, y[1:3, 0:4]\n";
  };
  const Ran r = run_on(machine, twice("STORE_ADD"));
  EXPECT_EQ(r.values.at("y"), (std::vector<double>{10, 20, 30, 40, 52, 64, 76, 88, 100, 112, 124, 136}));
  EXPECT_EQ(machine.sequencer().per_opcode()[static_cast<size_t>(isa::Opcode::StoreAdd)], 2u);
  constexpr uint64_t kTile = 2 * 4 * 4;
  EXPECT_EQ(r.read.at("y"), 2 * kTile);
  EXPECT_EQ(r.written.at("y"), 2 * kTile);
  EXPECT_EQ(r.read.at("x"), kTile);
  const Ran stores = run_on(machine, twice("STORE"));
  EXPECT_EQ(stores.read.at("y"), 0u);
  constexpr uint64_t kDataCycles = kTile / 16;
  EXPECT_EQ(stores.cycles, 3 * (kDataCycles + 10));
  EXPECT_EQ(r.cycles, stores.cycles + 2 * kDataCycles);
}

// The add is done in float64 and rounded once to the tensor's dtype, whatever the buffer's.
TEST(StoreAdd, RoundsTheSumToTheTensorsDtype) {
  const char* text = R"(
.tensor e[1][4] f32 = {0.0001, 0.5, -1, 0.0009}
.tensor h[1][4] f16 = {1, 1, 1, 1}
.tensor y[1][4] f32 = {1, 1, 1, 1}
.buffer s[1][4] f32
LOAD e[0:1, 0:4], s
STORE_ADD s, h[0:1, 0:4]
STORE_ADD s, y[0:1, 0:4]
)";
  RunResult r = run_program(isa::assemble(text, "round"), on("toy-tile"));
  // f16 has 10 fraction bits: 1 + 1e-4 rounds back to 1, 1 + 9e-4 up to 1 + 2^-10.
  EXPECT_EQ(r.final_values.at("h"), (std::vector<double>{1, 1.5, 0, 1 + 0x1p-10}));
  auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  EXPECT_EQ(r.final_values.at("y"),
            (std::vector<double>{f32(1 + f32(0.0001)), 1.5, 0, f32(1 + f32(0.0009))}));
}

// STORE_ADD is the LOAD, ADD, STORE of the tile done at once: the same HBM bytes per tensor and, into an f32
// tensor from an f32 buffer, the same values bit for bit, in half the instructions.
TEST(StoreAdd, MovesAndComputesWhatLoadAddStoreDoes) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {}));
  const std::string head = R"(
.tensor x[4][64] f32 random(seed=1)
.tensor y[8][64] f32 random(seed=2)
.buffer a[4][64] f32
.buffer b[4][64] f32
)";
  std::string atomic = head, spelled = head;
  for (int row : {0, 4, 2, 0}) {
    const std::string slice = "y[" + std::to_string(row) + ":" + std::to_string(row + 4) + ", 0:64]";
    atomic += "LOAD x[0:4, 0:64], a\nSTORE_ADD a, " + slice + "\n";
    spelled += "LOAD x[0:4, 0:64], a\nLOAD " + slice + ", b\nADD a, b, b\nSTORE b, " + slice + "\n";
  }
  const Ran r = run_on(machine, atomic);
  const Ran s = run_on(machine, spelled);
  EXPECT_EQ(r.values.at("y"), s.values.at("y"));
  EXPECT_NE(r.values.at("y"), run_on(machine, head + "LOAD x[0:4, 0:64], a\n").values.at("y"));
  EXPECT_EQ(r.read, s.read);
  EXPECT_EQ(r.written, s.written);
  EXPECT_EQ(r.instructions, 8u);
  EXPECT_EQ(s.instructions, 16u);
}

// A buffer in the tile register file is loaded and stored as a GPU's ld.global, st.global and red.global
// do: the same memory bytes and values as through an SRAM buffer, and no SRAM bytes. With h100-sm's SRAM
// port slowed to 2 B/cycle a 16 KB tile's LOAD into SRAM waits for the port (8,192 cycles, longer than
// HBM's side); into registers it streams through their 4 KB write port and is done sooner.
TEST(RegisterBuffers, AreLoadedAndStoredWithoutSharedMemory) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {"sram.bytes_per_cycle=2"}));
  auto program = [](const std::string& space) {
    return ".tensor x[64][64] f32 random(seed=1)\n.tensor y[64][64] f32\n.tensor z[64][64] f32 "
           "random(seed=2)\n"
           ".buffer a[64][64] f32 " +
           space + "\nLOAD x[0:64, 0:64], a\nSTORE a, y[0:64, 0:64]\nSTORE_ADD a, z[0:64, 0:64]\n";
  };
  const Ran sram = run_on(machine, program("sram"));
  const uint64_t sram_bytes = machine.sram()->bytes_read + machine.sram()->bytes_written;
  const Ran regs = run_on(machine, program("regs"));
  EXPECT_EQ(sram_bytes, 3u * 16384u);
  EXPECT_EQ(machine.sram()->bytes_read + machine.sram()->bytes_written, 0u);
  EXPECT_EQ(machine.tile_regs()->bytes_written, 16384u);
  EXPECT_EQ(machine.tile_regs()->bytes_read, 2u * 16384u);
  EXPECT_EQ(regs.values, sram.values);
  EXPECT_EQ(regs.read, sram.read);
  EXPECT_EQ(regs.written, sram.written);
  const std::string load = ".tensor x[64][64] f32 random(seed=1)\n.buffer a[64][64] f32 ";
  EXPECT_LT(run_on(machine, load + "regs\nLOAD x[0:64, 0:64], a\n").cycles,
            run_on(machine, load + "sram\nLOAD x[0:64, 0:64], a\n").cycles);
}

}  // namespace
}  // namespace attnsim
