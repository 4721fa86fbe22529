// The warp schedulers of a GPU core (an SM's four sub-partitions). A tile instruction runs on its unit
// (MXU, VPU, DMA) but reaches it as the warp instructions its GPU code executes, and a core issues at most
// `schedulers` x `instructions_per_cycle` of them per cycle, shared by all its resident blocks. So a tile
// instruction is done no earlier than its last warp instruction has issued, and a softmax step whose
// hundreds of instructions per warp compete with the mma.sync for issue slots takes that long.
//
// What a tile instruction costs follows how the project's tensor-core kernels compile it
// (docs/models/issue.md; checked against the instructions Nsight Compute counted,
// validation/data/h100_tc_warp_instructions.csv):
//  - a matrix product: one mma per mma_m x mma_n x mma_k, one ldmatrix per `ldmatrix_bytes` of SRAM
//    operand a warp loads (every warp loads the operand all warps share), and `address_per_ldmatrix`
//    integer instructions for each;
//  - an element-wise op or a row reduction: its instructions per element a thread holds, in the mma
//    accumulator layout (a warp owns `rows_per_warp` rows, each row spread over `threads_per_row`
//    threads); a 16-bit destination adds the conversion; a reduction adds its shuffle stages per row;
//  - LOAD, STORE and STORE_ADD: one copy instruction per `copy_bytes` (16 B per thread of a warp) and
//    `address_per_copy` integer instructions for each;
//  - a MOV of a 16-bit tile from SRAM into 16-bit registers: an mma operand's fragments, loaded as a
//    product loads its A (ldmatrix and its address, `fixed_per_warp`), not element by element;
//  - an element-wise op between the register file and SRAM (a MOV of O_i from its landed tile, a statistic
//    read from or written to the tile the DMA moves): each thread loads or stores its elements of each SRAM
//    operand with ld.shared / st.shared of `shared_access_bytes`, and `address_per_shared` integer
//    instructions for each (an op wholly in SRAM or wholly in registers has none: the former is the
//    model's SRAM-held program, the latter the registers the kernels use);
//  - a product in a kernel whose k-loops are rolled (`.kernel ... k_loops(rolled)`) and whose A comes from
//    SRAM: `rolled_kstep_instructions` per warp and k-step of mma_k (the loop's compare and branch and the
//    addresses it recomputes; unrolled, the compiler folds them into constants);
//  - every MXU and VPU instruction: `fixed_per_warp` per warp (index, predicate and loop set-up);
//  - a kernel may say its own mma shape (`.kernel ... mma(16, 8, 8)`: CUTLASS's sm80 builds) and that its
//    softmax is CUTLASS's iterative one (`softmax(iterative)`), whose row maximum of a score tile costs
//    `iterative_softmax_per_element` more per element a thread holds, and that its exponential is expf
//    (`exp(accurate)`: PyTorch's memory-efficient backward), whose EXP costs `accurate_exp_per_element`.
// No section: no issue limit (the toy and TPU-like machines, whose units are fed without warps).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "isa/code_overhead.h"
#include "isa/opcode.h"
#include "models/common/component.h"
#include "models/common/params.h"
#include "models/vpu/vpu.h"

namespace attnsim {

// How a block's warps share a product's output (isa::KernelDecl::warps): `warps` warps, bands of `rows`
// rows; warps = 0: a warp per `rows_per_warp` rows of the product, each loading all of B.
struct WarpTiling {
  int64_t warps = 0, rows = 0;
  // Each warp's mma instruction shape M x N x K (isa::KernelDecl::mma); {0, 0, 0}: the machine's.
  std::array<int64_t, 3> mma{0, 0, 0};
  isa::CodeOverhead overhead{};  // the kernel's own (isa::KernelDecl::overhead); unset fields the machine's
};

class IssueUnit : public Component {
 public:
  struct Params {
    int64_t schedulers = 4;
    int64_t instructions_per_cycle = 1;  // per scheduler
    // The fewest cycles between two instructions of one warp: the issue cycle and the fixed-latency wait
    // for the instruction before (a lone warp cannot issue every cycle).
    double cycles_per_warp_instruction = 1;
    // false: the warp instructions are counted, and limit nothing (a tile instruction is timed by its unit).
    bool limit = true;
    // The schedulers issue nothing while the core's MXU works on a product: one reading of an SM's
    // issue-active and tensor-active cycles adding up to 100%. The probe shows the other side giving way.
    bool mma_holds_schedulers = false;
    // Cycles a scheduler's tensor core loses to each warp instruction other than an mma that the scheduler
    // issues while it works on one (the scheduler issues the other warp's instruction first and the mma
    // waits): the product is delayed, not the other instructions (validation/data/h100_issue_probe.csv).
    double mma_cycles_per_other_instruction = 0;
    int64_t threads_per_warp = 32;
    int64_t rows_per_warp = 16;
    int64_t threads_per_row = 4;
    int64_t mma_m = 16, mma_n = 8, mma_k = 16;
    int64_t ldmatrix_bytes = 512;
    int64_t copy_bytes = 512;
    // Bytes one warp's red.global.add moves (a STORE_ADD's adds are issued as reductions from registers,
    // 32 threads x their vector of f32); 0: copy_bytes.
    int64_t red_bytes = 0;
    int64_t shared_access_bytes = 0;  // a thread's ld.shared / st.shared; 0: no cost (a mixed op is free)
    double address_per_shared = 0;
    double address_per_ldmatrix = 0;
    double address_per_copy = 0;
    double fixed_per_warp = 0;
    double rolled_kstep_instructions = 0;
    // A STORE or STORE_ADD is issued by the block's warps from their registers: the instruction group's
    // next instruction waits until the store's data have left the core (the store queue drains at the
    // core's store rate; Nsight Compute's lg-throttle stalls at the backward's red.global.add).
    bool stores_hold_issue = false;
    std::array<double, kVpuOpCount> per_element{};  // instructions per element a thread holds
    double convert_per_element = 0;                 // into a 16-bit destination
    double iterative_softmax_per_element = 0;  // per score a thread holds (iterative_softmax_instructions)
    // An EXP's instructions per element in a kernel whose exponential is expf
    // (isa::KernelDecl::accurate_exp); 0: per_element's, as in any kernel.
    double accurate_exp_per_element = 0;
    int64_t reduction_stages = 2;  // butterfly shuffles per row (log2 threads_per_row)
  };
  IssueUnit(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  // The warps along a product's rows and along its columns.
  std::array<int64_t, 2> warp_grid(int64_t m, const WarpTiling& tiling) const;
  // ldmatrix instructions of D (m x n) = A (m x k) B (k x n) whose A and B have these many bytes in SRAM:
  // each warp loads its rows of A and its columns of B.
  double ldmatrix_instructions(int64_t m, uint64_t a_sram_bytes, uint64_t b_sram_bytes,
                               const WarpTiling& tiling) const;
  // Warp instructions, summed over the warps that run it, of:
  // D (m x n) = A (m x k) B (k x n), whose A and B have these many bytes in SRAM (0: in registers), in a
  // kernel whose k-loops are rolled or not and whose warps share the product as `tiling` says;
  double matmul_instructions(int64_t m, int64_t k, int64_t n, uint64_t a_sram_bytes, uint64_t b_sram_bytes,
                             bool rolled_k_loops = false, const WarpTiling& tiling = {}) const;
  // The same with its ldmatrix counted already (ldmatrix_instructions), whether A comes from SRAM.
  double product_instructions(int64_t m, int64_t k, int64_t n, double ldmatrix, bool a_in_sram,
                              bool rolled_k_loops, const WarpTiling& tiling) const;
  // a vector op whose result (a reduction: whose source) is rows x cols, in a kernel whose exponential is
  // expf or not (isa::KernelDecl::accurate_exp);
  double vector_instructions(VpuOp op, int64_t rows, int64_t cols, bool to_16bit, bool accurate_exp = false,
                             const isa::CodeOverhead& code = {}) const;
  // a copy of `bytes` between memory and SRAM (a STORE_ADD's: `reduction`, red.global.add).
  double copy_instructions(uint64_t bytes, const isa::CodeOverhead& code = {}, bool reduction = false) const;
  // an mma operand's fragments loaded from `bytes` of SRAM into the registers of the warps of `rows`
  // (ldmatrix, each warp its own rows, as a product loads its A);
  double fragment_load_instructions(int64_t rows, uint64_t bytes, const isa::CodeOverhead& code = {}) const;
  // the ld.shared or st.shared by which the threads that hold a rows x cols tile (in the mma accumulator
  // layout) read or write its copy of `element_bytes` elements in SRAM, and their address instructions.
  double shared_access_instructions(int64_t rows, int64_t cols, int64_t element_bytes) const;

  // mma instructions alone of that product.
  double mma_instructions(int64_t m, int64_t k, int64_t n, const WarpTiling& tiling = {}) const;
  // What CUTLASS's iterative softmax (isa::KernelDecl::iterative_softmax) executes on a rows x cols score
  // tile beyond the ops the program names: iterative_softmax_per_element per element a thread holds.
  double iterative_softmax_instructions(int64_t rows, int64_t cols) const;

  struct Span {
    uint64_t start = 0;     // the schedulers' first cycle for them
    uint64_t port_end = 0;  // the cycle after the schedulers are through with them
    uint64_t done = 0;      // the cycle after the last one issued (each warp's own stream included)
  };
  // Issues `instructions`, spread over `warps` warps, from cycle `at` on, after what the core issued before;
  // returns the cycle after the last one issued: when the schedulers are through, or each warp's own
  // stream at cycles_per_warp_instruction, whichever is later. Records the counts.
  // `held` more cycles keep the schedulers from issuing (a product's MXU cycles, if mma_holds_schedulers).
  // Without the limit nothing is timed: start = port_end = done = at.
  Span issue_span(uint64_t at, double instructions, int64_t warps = 1 << 20, uint64_t held = 0);
  // What issue_span books, without booking it: the schedulers' cycles (`port`) and the warps' own
  // (`own`: from the first to the cycle after the last, at cycles_per_warp_instruction); counts them.
  // Without the limit both are 0.
  struct Cost {
    uint64_t port = 0, own = 0;
  };
  Cost count_issue(double instructions, int64_t warps = 1 << 20, uint64_t held = 0);
  uint64_t issue(uint64_t at, double instructions, int64_t warps = 1 << 20, uint64_t held = 0) {
    return issue_span(at, instructions, warps, held).done;
  }
  // The cycles a product on the core's tensor cores loses to `other_instructions` issued beside it, spread
  // over the schedulers (0 without the limit or for asynchronous mma).
  uint64_t mma_delay(double other_instructions) const;
  bool mma_yields() const { return params_.limit && params_.mma_cycles_per_other_instruction > 0; }
  // Instructions the schedulers issue in `cycles` while busy.
  double instructions_in(uint64_t cycles) const {
    return static_cast<double>(cycles *
                               static_cast<uint64_t>(params_.schedulers * params_.instructions_per_cycle));
  }
  uint64_t port_free() const { return free_; }
  // An older block's instructions take the schedulers from `at` (TileCore::set_older_preempts): what was
  // booked from there on resumes after them.
  void set_port_free(uint64_t at) { free_ = at; }
  int64_t warps(int64_t rows) const { return (rows + params_.rows_per_warp - 1) / params_.rows_per_warp; }
  // For the instructions from now on (validate: the FFMA kernels run none of the code the costs describe;
  // wgmma runs asynchronously beside the schedulers, so neither holds them nor waits for them).
  void set_limits(bool limit, bool mma_holds_schedulers, double mma_cycles_per_other_instruction) {
    params_.limit = limit;
    params_.mma_holds_schedulers = mma_holds_schedulers;
    params_.mma_cycles_per_other_instruction = mma_cycles_per_other_instruction;
  }
  void reset() { free_ = 0, warp_instructions = 0, busy_cycles = 0, ldmatrix = 0, by_opcode = {}; }
  // Files `instructions` (rounded as count_issue rounds them) under the tile instruction that issued them.
  void attribute(isa::Opcode op, double instructions) {
    by_opcode[static_cast<size_t>(op)] += static_cast<uint64_t>(std::llround(instructions));
  }
  void set_elapsed(uint64_t cycles) { elapsed_cycles = cycles; }

  uint64_t warp_instructions = 0;
  uint64_t ldmatrix = 0;  // of the products' SRAM operands (counted by the core, which knows the layout)
  // warp_instructions by the tile instruction that issued them (TileCore books every issue through
  // attribute), so a run says where its instructions go: products, softmax ops, copies.
  std::array<uint64_t, isa::kOpcodeCount> by_opcode{};
  uint64_t busy_cycles = 0;
  uint64_t elapsed_cycles = 0;

 private:
  std::array<int64_t, 3> mma_shape(const WarpTiling& tiling) const;
  // A kernel's own overhead where it gives one (isa::CodeOverhead), else the machine's.
  double fixed(const isa::CodeOverhead& code) const {
    return code.fixed_per_warp >= 0 ? code.fixed_per_warp : params_.fixed_per_warp;
  }
  double ldmatrix_address(const isa::CodeOverhead& code) const {
    return code.address_per_ldmatrix >= 0 ? code.address_per_ldmatrix : params_.address_per_ldmatrix;
  }
  double copy_address(const isa::CodeOverhead& code) const {
    return code.address_per_copy >= 0 ? code.address_per_copy : params_.address_per_copy;
  }
  Params params_;
  uint64_t free_ = 0;
};

void register_issue_models();  // YAML type "warp_schedulers"

}  // namespace attnsim
