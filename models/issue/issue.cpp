#include "models/issue/issue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/common/registry.h"

namespace attnsim {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

bool is_reduction(VpuOp op) {
  return op == VpuOp::RowMax || op == VpuOp::RowSum;
}

// The GPU code's instructions per element a thread holds, as the project's tensor-core kernels compile
// each op (validation/data/h100_tc_sass_mix.txt): exp2f is FSETP + FMUL + MUFU.EX2 + FMUL (the range
// fix-up of a non-ftz exp2), a division a reciprocal and a multiply, the causal mask a compare and a select.
std::array<double, kVpuOpCount> default_per_element() {
  std::array<double, kVpuOpCount> per{};
  per.fill(1.0);
  per[static_cast<size_t>(VpuOp::Exp)] = 4.0;
  per[static_cast<size_t>(VpuOp::Div)] = 2.0;
  per[static_cast<size_t>(VpuOp::MaskCausal)] = 2.0;
  return per;
}

}  // namespace

IssueUnit::IssueUnit(sc_core::sc_module_name instance, const Params& params)
    : Component(instance), params_(params) {
  const Params& p = params_;
  if (p.schedulers < 1 || p.instructions_per_cycle < 1 || p.threads_per_warp < 1 || p.rows_per_warp < 1 ||
      p.threads_per_row < 1 || p.mma_m < 1 || p.mma_n < 1 || p.mma_k < 1 || p.ldmatrix_bytes < 1 ||
      p.copy_bytes < 1)
    throw std::invalid_argument(fmt::format("{}: counts and sizes must be >= 1", name()));
  if (p.rows_per_warp * p.threads_per_row % p.threads_per_warp != 0)
    throw std::invalid_argument(fmt::format(
        "{}: rows_per_warp x threads_per_row ({} x {}) must be a multiple of threads_per_warp ({})", name(),
        p.rows_per_warp, p.threads_per_row, p.threads_per_warp));
  stats_.add(&warp_instructions, "warp_instructions", "instructions",
             "warp instructions issued (each tile instruction as its GPU code executes it)");
  stats_.add(&ldmatrix, "ldmatrix", "instructions",
             "ldmatrix of the products' SRAM operands, among them (Nsight Compute: "
             "smsp__inst_executed_op_ldsm)");
  stats_.add_formula(
      [this] {
        nlohmann::json out = nlohmann::json::object();
        for (size_t op = 0; op < by_opcode.size(); ++op)
          if (by_opcode[op]) out[std::string(isa::mnemonic(static_cast<isa::Opcode>(op)))] = by_opcode[op];
        return out;
      },
      "warp_instructions_by_op", "instructions",
      "warp_instructions by the tile instruction that issued them (opcodes that issued none left out)");
  stats_.add(&busy_cycles, "busy_cycles", "cycles", "cycles the core's schedulers spent issuing them");
  stats_.add(&elapsed_cycles, "elapsed_cycles", "cycles", "length of the run the utilisation refers to");
  stats_.add_formula(
      [this] {
        return elapsed_cycles ? static_cast<double>(busy_cycles) / static_cast<double>(elapsed_cycles) : 0.0;
      },
      "utilisation", "fraction", "busy_cycles / elapsed_cycles (Nsight Compute's issue slots busy)");
}

double IssueUnit::mma_instructions(int64_t m, int64_t k, int64_t n, const WarpTiling& tiling) const {
  const auto [mm, mn, mk] = mma_shape(tiling);
  return static_cast<double>(ceil_div(m, mm) * ceil_div(n, mn) * ceil_div(k, mk));
}

std::array<int64_t, 3> IssueUnit::mma_shape(const WarpTiling& tiling) const {
  if (tiling.mma[0] > 0) return tiling.mma;
  return {params_.mma_m, params_.mma_n, params_.mma_k};
}

double IssueUnit::iterative_softmax_instructions(int64_t rows, int64_t cols) const {
  const Params& p = params_;
  const int64_t rows_per_thread = p.rows_per_warp * p.threads_per_row / p.threads_per_warp;
  const int64_t elements = rows_per_thread * ceil_div(cols, p.threads_per_row);
  return p.iterative_softmax_per_element * static_cast<double>(elements * warps(rows));
}

std::array<int64_t, 2> IssueUnit::warp_grid(int64_t m, const WarpTiling& tiling) const {
  if (tiling.warps <= 0) return {warps(m), 1};
  const int64_t along_rows =
      std::clamp<int64_t>(ceil_div(m, std::max<int64_t>(tiling.rows, 1)), 1, tiling.warps);
  return {along_rows, std::max<int64_t>(tiling.warps / along_rows, 1)};
}

double IssueUnit::ldmatrix_instructions(int64_t m, uint64_t a_sram_bytes, uint64_t b_sram_bytes,
                                        const WarpTiling& tiling) const {
  // A is loaded once by each column of warps, B once by each row of them.
  const auto [along_rows, along_cols] = warp_grid(m, tiling);
  const uint64_t loaded =
      a_sram_bytes * static_cast<uint64_t>(along_cols) + b_sram_bytes * static_cast<uint64_t>(along_rows);
  return static_cast<double>(ceil_div(static_cast<int64_t>(loaded), params_.ldmatrix_bytes));
}

double IssueUnit::matmul_instructions(int64_t m, int64_t k, int64_t n, uint64_t a_sram_bytes,
                                      uint64_t b_sram_bytes, bool rolled_k_loops,
                                      const WarpTiling& tiling) const {
  return product_instructions(m, k, n, ldmatrix_instructions(m, a_sram_bytes, b_sram_bytes, tiling),
                              a_sram_bytes > 0, rolled_k_loops, tiling);
}

double IssueUnit::product_instructions(int64_t m, int64_t k, int64_t n, double ldmatrix, bool a_in_sram,
                                       bool rolled_k_loops, const WarpTiling& tiling) const {
  const Params& p = params_;
  const auto [along_rows, along_cols] = warp_grid(m, tiling);
  const int64_t warp_count = along_rows * along_cols;
  const double mma = mma_instructions(m, k, n, tiling);
  // A rolled loop steps through k with A's fragments loaded from SRAM at each step (the project's backward
  // kernels; with A in registers their loops are unrolled).
  const double rolled =
      rolled_k_loops && a_in_sram
          ? p.rolled_kstep_instructions * static_cast<double>(warp_count * ceil_div(k, mma_shape(tiling)[2]))
          : 0.0;
  return mma + rolled + ldmatrix * (1.0 + ldmatrix_address(tiling.overhead)) +
         fixed(tiling.overhead) * static_cast<double>(warp_count);
}

double IssueUnit::vector_instructions(VpuOp op, int64_t rows, int64_t cols, bool to_16bit, bool accurate_exp,
                                      const isa::CodeOverhead& code) const {
  const Params& p = params_;
  const int64_t rows_per_thread = p.rows_per_warp * p.threads_per_row / p.threads_per_warp;
  const int64_t elements = rows_per_thread * ceil_div(cols, p.threads_per_row);
  const double own = op == VpuOp::Exp && accurate_exp && p.accurate_exp_per_element > 0
                         ? p.accurate_exp_per_element
                         : p.per_element[static_cast<size_t>(op)];
  double per_warp = static_cast<double>(elements) * (own + (to_16bit ? p.convert_per_element : 0.0));
  // Each stage of the butterfly: a shuffle and the op, per row a thread holds.
  if (is_reduction(op)) per_warp += static_cast<double>(2 * p.reduction_stages * rows_per_thread);
  return (per_warp + fixed(code)) * static_cast<double>(warps(rows));
}

double IssueUnit::copy_instructions(uint64_t bytes, const isa::CodeOverhead& code, bool reduction) const {
  const double per = reduction && code.red_bytes >= 1     ? code.red_bytes
                     : reduction && params_.red_bytes > 0 ? static_cast<double>(params_.red_bytes)
                                                          : static_cast<double>(params_.copy_bytes);
  const double copies = std::ceil(static_cast<double>(bytes) / per - 1e-9);
  return copies * (1.0 + copy_address(code));
}

double IssueUnit::fragment_load_instructions(int64_t rows, uint64_t bytes,
                                             const isa::CodeOverhead& code) const {
  const Params& p = params_;
  const auto ldmatrix = static_cast<double>(ceil_div(static_cast<int64_t>(bytes), p.ldmatrix_bytes));
  return ldmatrix * (1.0 + ldmatrix_address(code)) + fixed(code) * static_cast<double>(warps(rows));
}

double IssueUnit::shared_access_instructions(int64_t rows, int64_t cols, int64_t element_bytes) const {
  const Params& p = params_;
  if (p.shared_access_bytes == 0) return 0;
  const int64_t rows_per_thread = p.rows_per_warp * p.threads_per_row / p.threads_per_warp;
  const int64_t bytes = rows_per_thread * ceil_div(cols, p.threads_per_row) * element_bytes;
  const auto accesses = static_cast<double>(ceil_div(bytes, p.shared_access_bytes));
  return accesses * (1.0 + p.address_per_shared) * static_cast<double>(warps(rows));
}

IssueUnit::Cost IssueUnit::count_issue(double instructions, int64_t warps, uint64_t held) {
  const auto count = static_cast<uint64_t>(std::llround(instructions));
  warp_instructions += count;
  if (!params_.limit) return {};
  const auto per_cycle = static_cast<uint64_t>(params_.schedulers * params_.instructions_per_cycle);
  const uint64_t cycles = (count + per_cycle - 1) / per_cycle + (params_.mma_holds_schedulers ? held : 0);
  busy_cycles += cycles;
  const double per_warp = static_cast<double>(count) / static_cast<double>(std::max<int64_t>(warps, 1));
  return {cycles, static_cast<uint64_t>(std::ceil(per_warp * params_.cycles_per_warp_instruction - 1e-9))};
}

IssueUnit::Span IssueUnit::issue_span(uint64_t at, double instructions, int64_t warps, uint64_t held) {
  const Cost cost = count_issue(instructions, warps, held);
  if (!params_.limit) return {at, at, at};
  const uint64_t start = std::max(at, free_);
  free_ = start + cost.port;
  return {start, free_, std::max(free_, start + cost.own)};
}

uint64_t IssueUnit::mma_delay(double other_instructions) const {
  if (!params_.limit || other_instructions <= 0) return 0;
  return static_cast<uint64_t>(std::llround(params_.mma_cycles_per_other_instruction * other_instructions /
                                            static_cast<double>(params_.schedulers)));
}

void register_issue_models() {
  Registry<IssueUnit>::instance().add(
      "warp_schedulers",
      "a GPU core's warp schedulers: each tile instruction issues as its warp instructions",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        IssueUnit::Params q;
        q.per_element = default_per_element();
        auto count = [&p](const char* key, int64_t& v, const char* unit, const char* what) {
          v = p.get<int64_t>(key, v, unit, what, 1, 1 << 20);
        };
        count("schedulers", q.schedulers, "schedulers", "warp schedulers per core (an SM's sub-partitions)");
        count("instructions_per_cycle", q.instructions_per_cycle, "instructions/cycle",
              "warp instructions each scheduler issues per cycle");
        q.limit =
            p.get<bool>("limit", q.limit, "",
                        "whether the issue slots limit when tile instructions are done (false: the warp "
                        "instructions are only counted)");
        q.stores_hold_issue =
            p.get<bool>("stores_hold_issue", q.stores_hold_issue, "",
                        "a STORE or STORE_ADD holds its instruction group until its data have left the core "
                        "(warps issue stores from registers and stall while the store queue drains)");
        q.mma_holds_schedulers =
            p.get<bool>("mma_holds_schedulers", q.mma_holds_schedulers, "",
                        "the schedulers issue nothing while the MXU works on a product (Hopper's mma.sync)");
        q.mma_cycles_per_other_instruction =
            p.get<double>("mma_cycles_per_other_instruction", q.mma_cycles_per_other_instruction, "cycles",
                          "cycles a scheduler's tensor core loses to each other warp instruction it issues "
                          "during a product "
                          "(Hopper's mma.sync)",
                          0.0, 1e3);
        q.cycles_per_warp_instruction = p.get<double>(
            "cycles_per_warp_instruction", q.cycles_per_warp_instruction, "cycles",
            "the fewest cycles between two instructions of one warp (issue + fixed-latency wait)", 1.0, 1e6);
        count("threads_per_warp", q.threads_per_warp, "threads", "threads of a warp");
        count("rows_per_warp", q.rows_per_warp, "rows", "tile rows one warp owns (an mma's M)");
        count("threads_per_row", q.threads_per_row, "threads",
              "threads that share a row of an mma accumulator (a quad)");
        count("mma_m", q.mma_m, "rows", "M of one mma instruction");
        count("mma_n", q.mma_n, "columns", "N of one mma instruction");
        count("mma_k", q.mma_k, "elements", "K of one mma instruction");
        count("ldmatrix_bytes", q.ldmatrix_bytes, "bytes",
              "SRAM operand bytes one ldmatrix loads for a warp");
        count("copy_bytes", q.copy_bytes, "bytes", "bytes one copy instruction (cp.async) moves for a warp");
        q.red_bytes =
            p.get<int64_t>("red_bytes", q.red_bytes, "bytes",
                           "bytes one warp's red.global.add (a STORE_ADD) moves (0: copy_bytes)", 0, 1 << 20);
        q.shared_access_bytes = p.get<int64_t>(
            "shared_access_bytes", q.shared_access_bytes, "bytes",
            "bytes a thread's ld.shared / st.shared moves when an op reads or writes an SRAM tile from "
            "registers (0: such accesses cost nothing)",
            0, 1 << 10);
        auto real = [&p](const char* key, double& v, const char* what) {
          v = p.get<double>(key, v, "instructions", what, 0.0, 1e6);
        };
        real("address_per_ldmatrix", q.address_per_ldmatrix,
             "integer instructions per ldmatrix (its address)");
        real("address_per_copy", q.address_per_copy,
             "integer instructions per copy instruction (its address)");
        real("address_per_shared", q.address_per_shared,
             "integer instructions per ld.shared / st.shared (its address)");
        real("fixed_per_warp", q.fixed_per_warp,
             "instructions per warp of every MXU and VPU tile instruction (index, predicate, loop set-up)");
        real("rolled_kstep_instructions", q.rolled_kstep_instructions,
             "instructions per warp and k-step of a product whose A comes from SRAM, in a kernel whose "
             "k-loops are rolled (.kernel ... k_loops(rolled)): the loop's compare, branch and addresses");
        real(
            "convert_per_element", q.convert_per_element,
            "instructions per element a vector op writes into a 16-bit destination (the f32 -> f16 packing)");
        real("iterative_softmax_per_element", q.iterative_softmax_per_element,
             "instructions per score a thread holds that CUTLASS's iterative softmax (.kernel ... "
             "softmax(iterative)) executes beyond the program's ops: its scalings, bound tests and their "
             "predicates, charged with the row maximum of each score tile");
        real("accurate_exp_per_element", q.accurate_exp_per_element,
             "instructions per element of an EXP in a kernel whose exponential is expf (.kernel ... "
             "exp(accurate)): its range reduction, ex2, scaling by 2^n and the score's multiply by the "
             "scale; 0: exp_per_element's");
        for (size_t i = 0; i < kVpuOpCount; ++i) {
          const std::string key = std::string(vpu_op_name(static_cast<VpuOp>(i))) + "_per_element";
          q.per_element[i] = p.get<double>(key, q.per_element[i], "instructions",
                                           "instructions per element a thread holds", 0.0, 1e6);
        }
        q.reduction_stages =
            p.get<int64_t>("reduction_stages", q.reduction_stages, "stages",
                           "shuffle stages of a row reduction (log2 threads_per_row)", 0, 16);
        return std::make_unique<IssueUnit>(instance, q);
      });
}

}  // namespace attnsim
