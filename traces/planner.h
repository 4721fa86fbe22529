// Block sizes from the on-chip memory size, as in the FlashAttention paper (Algorithm 1, line 1):
// B_c = M / (4d), B_r = min(B_c, d), with M counted in elements. The paper writes ceil(M / 4d); that can
// exceed M (M = 100, d = 3: ceil gives B_c = 9 and four d-wide blocks of 9 x 3 = 108 > 100 elements), so
// the planner takes floor, which keeps each of the four d-wide blocks (Q_i, K_j, V_j, O_i) within M / 4.
// Seed 001 writes ceil(59 / 12) = 4 for its example; 59 / 12 = 4.92, so its 4 is in fact the floor.
// For a real machine the planner then checks the schedule's actual buffers (S, P, statistics, f32
// accumulators included) against the SRAM and halves B_c (and B_r) until they fit, saying so.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnsim::traces {

struct BlockPlan {
  int64_t block_q = 0;                 // B_r
  int64_t block_k = 0;                 // B_c
  std::vector<std::string> reasoning;  // one line per step, for reports
  bool fits = false;
};

// The paper's rule for M elements of on-chip memory and head dimension d; the reasoning proves that
// Q_i, K_j, V_j, O_i (and S_ij, as seed 001 counts) fit in M elements.
BlockPlan plan_paper(int64_t m_elements, int64_t d);

// For a machine: M = sram_bytes / element_bytes, the paper's rule, then `buffer_bytes(B_r, B_c)` (the
// schedule's real on-chip inventory, in bytes) must fit in sram_bytes; B_c and then B_r are halved until
// it does. fits = false if even 1 x 1 blocks do not fit.
BlockPlan plan_for_sram(uint64_t sram_bytes, int64_t d, int element_bytes,
                        const std::function<uint64_t(int64_t block_q, int64_t block_k)>& buffer_bytes);

}  // namespace attnsim::traces
