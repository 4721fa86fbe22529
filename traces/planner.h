// Block sizes from the on-chip memory size, as in the FlashAttention paper (Algorithm 1, line 1):
// B_c = M / (4d), B_r = min(B_c, d), with M counted in elements. The paper writes ceil(M / 4d); that can
// exceed M (M = 100, d = 3: ceil gives B_c = 9 and four d-wide blocks of 9 x 3 = 108 > 100 elements), so
// the planner takes floor, which keeps each of the four d-wide blocks (Q_i, K_j, V_j, O_i) within M / 4.
// Seed 001 writes ceil(59 / 12) = 4 for its example; 59 / 12 = 4.92, so its 4 is in fact the floor.
// For a real machine the planner then checks the schedule's actual buffers (S, P, statistics, f32
// accumulators included) against the SRAM and halves B_c (and B_r) until they fit, saying so.
//
// The hardware rule is what GPU kernels do instead (FlashAttention-2's kernel traits, cuDNN): B_r and B_c
// chosen apart, each a power of two and a multiple of the matrix unit's tile, the largest pair whose buffers
// fit with the next K/V block prefetched (docs/planner.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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

enum class PlannerRule { Paper, Hardware };
std::string_view planner_rule_name(PlannerRule rule);  // "paper", "hardware"
std::optional<PlannerRule> find_planner_rule(std::string_view name);

// The sizes the hardware rule tries for one dimension: powers of two that are multiples of `tile` (the
// tile itself when it is a power of two; tile x 2^k otherwise, as no power of two is a multiple of an odd
// factor), from the smallest up to the first that covers n (a larger block would only be cut to n).
std::vector<int64_t> hardware_block_sizes(int64_t tile, int64_t n);

// The hardware rule: B_r from hardware_block_sizes(tile_q, n), B_c from hardware_block_sizes(tile_k, n);
// `buffer_bytes(B_r, B_c)` (the schedule's real inventory, K/V double-buffered when the schedule is) must
// fit in sram_bytes. Of the pairs that fit it takes the largest B_r x B_c; ties go to the squarer pair, then
// to the larger B_r (FlashAttention-2 kernels take 128 x 64 over 64 x 128). fits = false when none fits.
BlockPlan plan_hardware(uint64_t sram_bytes, int64_t n, int64_t tile_q, int64_t tile_k,
                        const std::function<uint64_t(int64_t block_q, int64_t block_k)>& buffer_bytes);

}  // namespace attnsim::traces
