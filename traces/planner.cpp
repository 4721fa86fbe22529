#include "traces/planner.h"

#include <algorithm>

#include <fmt/format.h>

namespace attnsim::traces {

BlockPlan plan_paper(int64_t m_elements, int64_t d) {
  BlockPlan plan;
  if (m_elements < 4 * d) {
    plan.reasoning.push_back(
        fmt::format("M = {} < 4d = {}: not even one row of each block fits", m_elements, 4 * d));
    return plan;
  }
  plan.block_k = m_elements / (4 * d);
  plan.block_q = std::min(plan.block_k, d);
  const int64_t ceil_bc = (m_elements + 4 * d - 1) / (4 * d);
  plan.reasoning.push_back(
      fmt::format("B_c = floor(M / 4d) = floor({} / {}) = {} (the paper's ceil gives {})", m_elements, 4 * d,
                  plan.block_k, ceil_bc));
  plan.reasoning.push_back(
      fmt::format("B_r = min(B_c, d) = min({}, {}) = {}", plan.block_k, d, plan.block_q));
  const int64_t qkvo = 2 * plan.block_q * d + 2 * plan.block_k * d;
  const int64_t qkvs = plan.block_q * d + 2 * plan.block_k * d + plan.block_q * plan.block_k;
  plan.reasoning.push_back(fmt::format("Q_i + K_j + V_j + O_i = {}x{} + 2 x {}x{} + {}x{} = {} <= M = {}",
                                       plan.block_q, d, plan.block_k, d, plan.block_q, d, qkvo, m_elements));
  plan.reasoning.push_back(fmt::format("Q_i + K_j + V_j + S_ij = {} + 2 x {} + {}x{} = {} <= M = {}",
                                       plan.block_q * d, plan.block_k * d, plan.block_q, plan.block_k, qkvs,
                                       m_elements));
  plan.fits = qkvo <= m_elements && qkvs <= m_elements;
  return plan;
}

BlockPlan plan_for_sram(uint64_t sram_bytes, int64_t d, int element_bytes,
                        const std::function<uint64_t(int64_t, int64_t)>& buffer_bytes) {
  const int64_t m_elements = static_cast<int64_t>(sram_bytes / static_cast<uint64_t>(element_bytes));
  BlockPlan plan = plan_paper(m_elements, d);
  plan.reasoning.insert(plan.reasoning.begin(),
                        fmt::format("M = {} bytes of SRAM / {} bytes per element = {} elements", sram_bytes,
                                    element_bytes, m_elements));
  if (plan.block_k == 0) plan.block_k = plan.block_q = 1;
  while (true) {
    const uint64_t need = buffer_bytes(plan.block_q, plan.block_k);
    if (need <= sram_bytes) {
      plan.reasoning.push_back(
          fmt::format("the schedule's buffers at B_r = {}, B_c = {} need {} bytes <= {}: fits", plan.block_q,
                      plan.block_k, need, sram_bytes));
      plan.fits = true;
      return plan;
    }
    plan.reasoning.push_back(
        fmt::format("the schedule's buffers at B_r = {}, B_c = {} need {} bytes > {} (S, P and f32 "
                    "accumulators are not in "
                    "the paper's 4d count)",
                    plan.block_q, plan.block_k, need, sram_bytes));
    if (plan.block_k > plan.block_q)
      plan.block_k = std::max<int64_t>(plan.block_q, plan.block_k / 2);
    else if (plan.block_q > 1)
      plan.block_q /= 2, plan.block_k = std::max<int64_t>(1, plan.block_k / 2);
    else {
      plan.fits = false;
      return plan;
    }
  }
}

std::string_view planner_rule_name(PlannerRule rule) {
  return rule == PlannerRule::Paper ? "paper" : "hardware";
}

std::optional<PlannerRule> find_planner_rule(std::string_view name) {
  if (name == "paper") return PlannerRule::Paper;
  if (name == "hardware") return PlannerRule::Hardware;
  return std::nullopt;
}

std::vector<int64_t> hardware_block_sizes(int64_t tile, int64_t n) {
  std::vector<int64_t> sizes;
  if (tile < 1 || n < 1) return sizes;
  // 2^24 bounds N (compare's limit), so the ladder stops long before it could overflow.
  for (int64_t b = tile; b <= (int64_t{1} << 40); b *= 2) {
    sizes.push_back(b);
    if (b >= n) break;
  }
  return sizes;
}

BlockPlan plan_hardware(uint64_t sram_bytes, int64_t n, int64_t tile_q, int64_t tile_k,
                        const std::function<uint64_t(int64_t, int64_t)>& buffer_bytes) {
  BlockPlan plan;
  const auto power_of_two = [](int64_t t) { return t > 0 && (t & (t - 1)) == 0; };
  const auto ladder = [&](int64_t tile, const char* what) {
    return power_of_two(tile) ? fmt::format("{}, {}, {}, ... (powers of two, multiples of the MXU's {} {})",
                                            tile, 2 * tile, 4 * tile, tile, what)
                              : fmt::format(
                                    "{}, {}, {}, ... (the MXU's {} {} is no power of two: its "
                                    "multiples times powers of two)",
                                    tile, 2 * tile, 4 * tile, tile, what);
  };
  plan.reasoning.push_back("hardware rule: B_r and B_c apart, each the largest that fits");
  plan.reasoning.push_back("B_r from " + ladder(tile_q, "rows"));
  plan.reasoning.push_back("B_c from " + ladder(tile_k, "columns"));
  const std::vector<int64_t> rows = hardware_block_sizes(tile_q, n), cols = hardware_block_sizes(tile_k, n);
  // Buffers grow with either block, so for each B_r only the largest B_c that fits can win, and once the
  // smallest B_c stops fitting no larger B_r will.
  struct Best {
    int64_t q = 0, k = 0;
    uint64_t bytes = 0;
  } best;
  const auto better = [](int64_t q1, int64_t k1, int64_t q2, int64_t k2) {
    if (q1 * k1 != q2 * k2) return q1 * k1 > q2 * k2;
    const int64_t hi1 = std::max(q1, k1), lo1 = std::min(q1, k1), hi2 = std::max(q2, k2),
                  lo2 = std::min(q2, k2);
    if (hi1 * lo2 != hi2 * lo1) return hi1 * lo2 < hi2 * lo1;  // hi1/lo1 < hi2/lo2: squarer
    return q1 > q2;
  };
  for (int64_t q : rows) {
    int64_t fit_k = 0;
    uint64_t fit_bytes = 0, over_bytes = 0;
    for (int64_t k : cols) {
      const uint64_t need = buffer_bytes(q, k);
      if (need > sram_bytes) {
        over_bytes = need;
        break;
      }
      fit_k = k;
      fit_bytes = need;
    }
    if (fit_k == 0) {
      plan.reasoning.push_back(fmt::format("B_r = {}: not even B_c = {} fits ({} bytes > {})", q,
                                           cols.front(), over_bytes, sram_bytes));
      break;
    }
    plan.reasoning.push_back(
        fmt::format("B_r = {}: largest B_c = {} ({} bytes <= {}{})", q, fit_k, fit_bytes, sram_bytes,
                    over_bytes ? fmt::format("; {} needs {}", 2 * fit_k, over_bytes) : ""));
    if (best.q == 0 || better(q, fit_k, best.q, best.k)) best = {q, fit_k, fit_bytes};
  }
  if (best.q == 0) return plan;
  plan.block_q = best.q;
  plan.block_k = best.k;
  plan.fits = true;
  plan.reasoning.push_back(fmt::format(
      "chosen B_r = {}, B_c = {}: the largest B_r x B_c that fits (ties: the squarer, then the larger B_r); "
      "the schedule's buffers need {} bytes <= {}",
      best.q, best.k, best.bytes, sram_bytes));
  return plan;
}

}  // namespace attnsim::traces
