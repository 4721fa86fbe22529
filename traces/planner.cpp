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

}  // namespace attnsim::traces
