// IssueUnit: the warp instructions a tile instruction costs follow the documented rules
// (docs/models/issue.md) worked by hand here, the core issues schedulers x instructions_per_cycle of them per
// cycle in arrival order, and the "warp_schedulers" factory reads typed params.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <memory>
#include <stdexcept>
#include <string>

#include "isa/diagnostics.h"
#include "models/common/registry.h"
#include "models/issue/issue.h"

namespace attnsim {
namespace {

std::unique_ptr<IssueUnit> build(const std::string& yaml) {
  register_issue_models();
  auto source = std::make_shared<ConfigSource>();
  source->file = "machine.yaml";
  ParamReader reader(YAML::Load(yaml), "issue", source);
  auto unit = Registry<IssueUnit>::instance().create("issue", reader, "warp_schedulers", BuildContext{});
  reader.finish();
  return unit;
}

constexpr const char* kCosts =
    "fixed_per_warp: 4\naddress_per_ldmatrix: 2\naddress_per_copy: 3\nconvert_per_element: 1.5\n";

// 128 x 64 x 64 (flash2's S = Q K^T): 8 warps of 16 rows; 8 x 8 x 4 = 256 mma of m16n8k16. A (16 KB) is
// loaded once, B (8 KB) by each of the 8 warps: (16,384 + 8 x 8,192) / 512 = 160 ldmatrix, each with 2
// address instructions; 4 per warp fixed.
TEST(IssueUnit, AMatrixProductIsItsMmasAndEveryWarpsFragmentLoads) {
  auto issue = build(kCosts);
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 16384, 8192), 256 + 160 * 3 + 8 * 4);
  // P V with P in registers: only V (8 KB) is loaded, by every warp.
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 0, 8192), 256 + 128 * 3 + 8 * 4);
  // Fewer rows than a warp owns: one warp, one mma row.
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(8, 16, 8, 0, 0), 1 + 4);
}

// A kernel whose block's warps share a product in two dimensions (isa::KernelDecl::warps; FlashAttention-2's
// backward: 8 warps, 32-row bands). 128 x 64 x 128 (S = Q_i K_j^T at d = 64): 4 warps along the rows, 2 along
// the columns; each loads its 32 rows of A (16 KB / 4) and its 64 columns of B (16 KB / 2): (2 x 16,384 + 4
// x 16,384) / 512 = 192 ldmatrix, where a warp per 16 rows loading all of B is (16,384 + 8 x 16,384) / 512 =
// 288. 64 rows (d = 128's query blocks) are 2 bands: 2 x 4 warps. More bands than warps: each warp takes
// several (FlashAttention-2's forward, 4 warps over 128 rows in 16-row bands: B loaded 4 times).
TEST(IssueUnit, AKernelsWarpLayoutDecidesWhoLoadsWhat) {
  auto issue = build(kCosts);
  const WarpTiling backward{8, 32}, forward{4, 16};
  EXPECT_EQ(issue->warp_grid(128, backward), (std::array<int64_t, 2>{4, 2}));
  EXPECT_EQ(issue->warp_grid(64, backward), (std::array<int64_t, 2>{2, 4}));
  EXPECT_EQ(issue->warp_grid(128, forward), (std::array<int64_t, 2>{4, 1}));
  EXPECT_EQ(issue->warp_grid(128, {}), (std::array<int64_t, 2>{8, 1}));
  EXPECT_DOUBLE_EQ(issue->ldmatrix_instructions(128, 16384, 16384, backward), 192);
  EXPECT_DOUBLE_EQ(issue->ldmatrix_instructions(128, 16384, 16384, {}), 288);
  EXPECT_DOUBLE_EQ(issue->ldmatrix_instructions(128, 16384, 16384, forward), 160);
  // The same mma; fixed costs for the 8 warps that share it.
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 128, 16384, 16384, false, backward),
                   512 + 192 * 3 + 8 * 4);
}

// In a kernel whose k-loops are rolled each warp pays rolled_kstep_instructions per k-step of 16 of a
// product whose A comes from SRAM: 128 x 64 x 64 is 8 warps x 4 k-steps = 32 of them. With A in registers
// (the kernels unroll that loop) or in a kernel whose loops are unrolled, nothing is added.
TEST(IssueUnit, ARolledKLoopCostsItsInstructionsPerWarpAndKStep) {
  auto issue = build(std::string(kCosts) + "rolled_kstep_instructions: 12\n");
  const double unrolled = 256 + 160 * 3 + 8 * 4;
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 16384, 8192, true), unrolled + 12 * 32);
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 16384, 8192, false), unrolled);
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 0, 8192, true), 256 + 128 * 3 + 8 * 4);
  // k = 40 is three k-steps of 16 (the last one partial) for each of one warp's rows.
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(16, 40, 8, 1280, 640, true), 3 + 4 * 3 + 4 + 12 * 3);
}

// A kernel's own mma shape (isa::KernelDecl::mma): CUTLASS's sm80 builds multiply f16 in 16 x 8 x 8
// instructions (HMMA.1688), so 128 x 64 x 64 is 8 x 8 x 8 = 512 of them where 16 x 8 x 16 makes 256; the
// fragment loads are the same bytes. A rolled loop steps k by the kernel's K: 8 k-steps a warp.
TEST(IssueUnit, AKernelsMmaShapeCountsItsInstructions) {
  auto issue = build(std::string(kCosts) + "rolled_kstep_instructions: 12\n");
  WarpTiling cutlass;
  cutlass.mma = {16, 8, 8};
  EXPECT_DOUBLE_EQ(issue->mma_instructions(128, 64, 64), 256);
  EXPECT_DOUBLE_EQ(issue->mma_instructions(128, 64, 64, cutlass), 512);
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 16384, 8192, false, cutlass),
                   512 + 160 * 3 + 8 * 4);
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 16384, 8192, true, cutlass),
                   512 + 160 * 3 + 8 * 4 + 12 * 8 * 8);
}

// CUTLASS's iterative softmax: iterative_softmax_per_element per score a thread holds. A 64 x 64 tile is 4
// warps of 16 rows; a thread holds 2 rows x 16 columns: 4 x 32 x 2.5 = 320. Without the key: nothing.
TEST(IssueUnit, TheIterativeSoftmaxCostsItsInstructionsPerScoreAThreadHolds) {
  EXPECT_DOUBLE_EQ(build(std::string(kCosts) + "iterative_softmax_per_element: 2.5\n")
                       ->iterative_softmax_instructions(64, 64),
                   320);
  EXPECT_DOUBLE_EQ(build(kCosts)->iterative_softmax_instructions(64, 64), 0);
}

// A kernel whose exponential is expf (exp(accurate)): accurate_exp_per_element per element instead of
// exp_per_element, the conversion as before; other ops and kernels without it unchanged; without the key
// expf costs what exp2 does.
TEST(IssueUnit, AnAccurateExpCostsItsOwnInstructionsPerElement) {
  auto issue = build(std::string(kCosts) + "accurate_exp_per_element: 9\n");
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Exp, 128, 64, true, true), (32 * 10.5 + 4) * 8);
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Exp, 128, 64, true, false), (32 * 5.5 + 4) * 8);
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Sub, 128, 64, false, true), (32 + 4) * 8);
  EXPECT_DOUBLE_EQ(build(kCosts)->vector_instructions(VpuOp::Exp, 128, 64, true, true), (32 * 5.5 + 4) * 8);
}

// In the mma accumulator layout a thread holds 2 of its warp's 16 rows and a quarter of each row's columns.
TEST(IssueUnit, AVectorOpCostsItsInstructionsPerElementAThreadHolds) {
  auto issue = build(kCosts);
  // exp over 128 x 64 into f16: 2 x 16 = 32 elements a thread, 4 + 1.5 each, + 4; 8 warps.
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Exp, 128, 64, true), (32 * 5.5 + 4) * 8);
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Exp, 128, 64, false), (32 * 4 + 4) * 8);
  // A row maximum adds two butterfly stages (a shuffle and a max) for each of the thread's 2 rows.
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::RowMax, 128, 64, false), (32 + 2 * 2 * 2 + 4) * 8);
  // One value per row (the row statistics): every thread of the row's quad holds it, 2 rows a thread.
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Mul, 128, 1, false), (2 + 4) * 8);
}

// A tile in SRAM that registers are read from or written to: each thread moves its elements (2 rows x a
// quarter of the columns) in ld.shared / st.shared of shared_access_bytes, each with its address.
TEST(IssueUnit, ASharedMemoryAccessIsOnePerThreadsBytesAndItsAddress) {
  auto issue = build("shared_access_bytes: 4\naddress_per_shared: 2\n");
  // O_i as f16, 64 x 64: 2 x 16 elements a thread, 64 bytes, 16 accesses of 4 bytes; 4 warps.
  EXPECT_DOUBLE_EQ(issue->shared_access_instructions(64, 64, 2), 16 * 3 * 4);
  // A row statistic in f32, 128 x 1: a float for each of a thread's 2 rows; 8 warps.
  EXPECT_DOUBLE_EQ(issue->shared_access_instructions(128, 1, 4), 2 * 3 * 8);
  // Off by default: an op between registers and SRAM costs its arithmetic alone.
  EXPECT_DOUBLE_EQ(build(kCosts)->shared_access_instructions(64, 64, 2), 0.0);
  EXPECT_THROW(build("shared_access_bytes: -1\n"), InputError);
}

// An mma operand's fragments (Q_i before the key loop) load as a product loads its A: one ldmatrix per
// 512 bytes with its address instructions, and the fixed cost per warp.
TEST(IssueUnit, AnOperandsFragmentsLoadAsLdmatrix) {
  auto issue = build(kCosts);
  // 128 x 64 f16 (16 KB): 32 ldmatrix x (1 + 2) + 8 warps x 4.
  EXPECT_DOUBLE_EQ(issue->fragment_load_instructions(128, 16384), 32 * 3 + 8 * 4);
}

TEST(IssueUnit, ACopyIsOneInstructionPer16BytesOfEachThreadAndItsAddress) {
  auto issue = build(kCosts);
  EXPECT_DOUBLE_EQ(issue->copy_instructions(8192), 16 * 4);
  EXPECT_DOUBLE_EQ(issue->copy_instructions(100), 1 * 4);  // a partial copy is still one
}

// A STORE_ADD's adds are red.global.add from registers: red_bytes a warp instruction (the project's
// kernels' red.global.add.v2.f32: 32 x 8 bytes), each with its address; a kernel may say its own width
// (FlashAttention-2's scalar atomicAdd of an f32: 128). Without red_bytes, copy_bytes.
TEST(IssueUnit, AReductionIsOneInstructionPerRedBytesAndItsAddress) {
  auto issue = build(std::string(kCosts) + "red_bytes: 256\n");
  EXPECT_DOUBLE_EQ(issue->copy_instructions(8192, {}, true), 32 * 4);
  EXPECT_DOUBLE_EQ(issue->copy_instructions(8192, {}, false), 16 * 4);
  EXPECT_DOUBLE_EQ(issue->copy_instructions(8192, {-1, -1, 0.37, 128}, true), 64 * 1.37);
  EXPECT_DOUBLE_EQ(build(kCosts)->copy_instructions(8192, {}, true), 16 * 4);
}

// A kernel's own overhead (isa::CodeOverhead, `.kernel ... overhead(...)`) replaces the machine's fields it
// gives, and only those: FlashAttention-2's code, 1.7 fixed a warp and tile instruction, 0.37 address
// instructions per ldmatrix and per copy. The product of the first test, 256 mma and 160 ldmatrix over 8
// warps; a 128 x 64 SUB (32 elements a thread, 8 warps); 16 KB copied (32 copy instructions); Q_i's 16 KB
// of fragments (32 ldmatrix, 8 warps).
TEST(IssueUnit, AKernelsOwnOverheadReplacesTheMachines) {
  auto issue = build(kCosts);
  const isa::CodeOverhead flash{1.7, 0.37, 0.37}, copies_only{-1, -1, 0.5};
  WarpTiling tiling;
  tiling.overhead = flash;
  EXPECT_DOUBLE_EQ(issue->matmul_instructions(128, 64, 64, 16384, 8192, false, tiling),
                   256 + 160 * 1.37 + 8 * 1.7);
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Sub, 128, 64, false, false, flash), (32 + 1.7) * 8);
  EXPECT_DOUBLE_EQ(issue->copy_instructions(16384, flash), 32 * 1.37);
  EXPECT_DOUBLE_EQ(issue->fragment_load_instructions(128, 16384, flash), 32 * 1.37 + 8 * 1.7);
  EXPECT_DOUBLE_EQ(issue->vector_instructions(VpuOp::Sub, 128, 64, false, false, copies_only), (32 + 4) * 8);
  EXPECT_DOUBLE_EQ(issue->copy_instructions(16384, copies_only), 32 * 1.5);
  EXPECT_DOUBLE_EQ(issue->copy_instructions(16384), 32 * 4.0);
}

TEST(IssueUnit, SchedulersIssueInArrivalOrderAtTheirRate) {
  auto issue = build("schedulers: 4\n");
  EXPECT_EQ(issue->issue(0, 10), 3u);     // 10 instructions, 4 per cycle: the last in cycle 3
  EXPECT_EQ(issue->issue(1, 8), 5u);      // waits for the first: cycles 3 and 4
  EXPECT_EQ(issue->issue(100, 4), 101u);  // an idle core starts at once
  EXPECT_EQ(issue->warp_instructions, 22u);
  EXPECT_EQ(issue->busy_cycles, 6u);
  auto two = build("schedulers: 2\ninstructions_per_cycle: 2\n");
  EXPECT_EQ(two->issue(0, 10), 3u);
  issue->reset();
  EXPECT_EQ(issue->issue(0, 4), 1u);
  EXPECT_EQ(issue->warp_instructions, 4u);
}

TEST(IssueUnitParams, DefaultsAreAnSmsFourSchedulersAndMmaSyncsShapes) {
  const auto unit = build("{}");
  const IssueUnit::Params& p = unit->params();
  EXPECT_EQ(p.schedulers, 4);
  EXPECT_EQ(p.instructions_per_cycle, 1);
  EXPECT_EQ(p.mma_m * p.mma_n * p.mma_k, 16 * 8 * 16);
  EXPECT_EQ(p.ldmatrix_bytes, 512);
  EXPECT_EQ(p.copy_bytes, 512);
  EXPECT_DOUBLE_EQ(p.per_element[static_cast<size_t>(VpuOp::Exp)], 4.0);
  EXPECT_DOUBLE_EQ(build("exp_per_element: 2\n")->params().per_element[static_cast<size_t>(VpuOp::Exp)], 2.0);
}

TEST(IssueUnitParams, AnUnknownKeyOrALayoutThatSplitsAThreadIsRejected) {
  EXPECT_THROW(build("schedulerz: 4\n"), InputError);
  EXPECT_THROW(build("schedulers: 0\n"), InputError);
  EXPECT_THROW(build("rows_per_warp: 12\n"), std::invalid_argument);  // 12 x 4 is not a multiple of 32
}

}  // namespace
}  // namespace attnsim
