#include "sim/compare_codec.h"

#include <nlohmann/json.hpp>
#include <optional>

namespace nlohmann {

template <class T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& value) {
    if (value)
      j = *value;
    else
      j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& value) {
    if (j.is_null())
      value.reset();
    else
      value = j.get<T>();
  }
};

}  // namespace nlohmann

namespace attnsim {

// Every field of every struct in a row: a field left out here would silently vanish from parallel runs,
// which the test comparing `compare --jobs 1` with `--jobs 2` output would see.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EnergyLevel, name, count_unit, pj_per_count, count, count_per_tensor)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EnergyReport, scope, levels)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelReport, name, grid, blocks, blocks_per_core, waves, start_cycle,
                                   end_cycle, warp_instructions)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BlockRecord, launch, index, core, start_cycle, end_cycle)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ChipSummary, cores, cycles, seconds, instructions, has_l2, sm_l2_read,
                                   sm_l2_written, l2_read_hit, l2_read_miss, dram_read, dram_written,
                                   dirty_at_kernel_end, resident_at_kernel_end, kernels, blocks,
                                   min_blocks_per_core, max_blocks_per_core, mxu_flops, vpu_element_ops,
                                   has_issue, issue_limits, warp_instructions, warp_instructions_by_op,
                                   max_issue_busy_cycles, block_sram_bytes, quantum_cycles,
                                   l2_flushed_between_kernels, energy)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RuleChoice, rule, block_q, block_k, fits, reasoning)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CompareRow, schedule, block_q, block_k, planner, plan, rules, error,
                                   bytes_read, bytes_written, hbm_read, hbm_written, sram_peak, mxu_flops,
                                   vpu_element_ops, cycles, instructions, seconds, max_abs_error,
                                   max_rel_error, passed, host_seconds, chip, blocks, energy)

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RowOutcome, row, input_error, file, message, line, col)

std::vector<uint8_t> encode_outcome(const RowOutcome& outcome) {
  return nlohmann::json::to_cbor(nlohmann::json(outcome));
}

RowOutcome decode_outcome(const std::vector<uint8_t>& bytes) {
  return nlohmann::json::from_cbor(bytes).get<RowOutcome>();
}

}  // namespace attnsim
