// What a whole-chip run moved and took, level by level, read back from the chip's models: SM <-> L2 bytes
// (the network's ledger: what the programs load and store), L2 hits and misses, DRAM bytes (sector-rounded,
// what the DRAM model served), dirty bytes left in L2 at each kernel's end, time, kernels and waves.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "chip/chip.h"
#include "isa/program.h"

namespace attnsim {

using TensorBytes = std::map<std::string, uint64_t>;

uint64_t total(const TensorBytes& bytes);

struct ChipSummary {
  int64_t cores = 0;
  uint64_t cycles = 0;
  double seconds = 0;
  uint64_t instructions = 0;
  bool has_l2 = false;
  TensorBytes sm_l2_read, sm_l2_written;  // requested by the programs (SM <-> L2; SM <-> DRAM without L2)
  TensorBytes l2_read_hit, l2_read_miss;  // bytes (sectors x sector size)
  TensorBytes dram_read, dram_written;    // sector-rounded, during kernels
  // Read sectors that missed the partition a request looked up first (Nsight Compute's
  // lts__t_sectors_srcunit_tex_op_read_lookup_miss; a GPU's writes never miss: sectors carry byte masks).
  uint64_t l2_lookup_read_miss_sectors = 0;
  // Sectors that crossed between the partitions (far_data: copy): a copy's fill from the far-homed line's
  // home, a store to a far-homed line (Nsight Compute's lts__t_sectors_srcunit_ltcfabric counts both).
  uint64_t l2_fabric_sectors = 0;
  // Read sectors of copies that missed in their home partition too (read from DRAM): Nsight Compute's
  // lts__t_sectors_lookup_miss less its srcunit_tex part.
  uint64_t l2_home_lookup_miss_sectors = 0;
  // Read sectors that rode on another core's request in the L2's request coalescer (l2.coalescer_entries):
  // in the SM <-> L2 reads, in neither the hits nor the misses (Nsight Compute: lrc__xbar2gpc_sectors_op_read
  // less lrc__lts2lrc_sectors_op_read).
  uint64_t l2_coalesced_read_sectors = 0;
  TensorBytes dirty_at_kernel_end;     // dirty in L2 when kernels ended: not counted as DRAM writes
  TensorBytes resident_at_kernel_end;  // valid in L2 when kernels ended (a line in two partitions once)
  std::vector<KernelReport> kernels;
  uint64_t blocks = 0;
  uint64_t min_blocks_per_core = 0, max_blocks_per_core = 0;
  uint64_t mxu_flops = 0, vpu_element_ops = 0;
  // With an issue unit: warp instructions of all cores, and the busiest core's schedulers.
  bool has_issue = false, issue_limits = false;
  uint64_t warp_instructions = 0, max_issue_busy_cycles = 0;
  std::map<std::string, uint64_t> warp_instructions_by_op;  // by the tile instruction that issued them
  uint64_t block_sram_bytes = 0;
  uint64_t quantum_cycles = 0;
  bool l2_flushed_between_kernels = true;
  std::optional<EnergyReport> energy;  // none: the config has no energy: section
};

ChipSummary summarize_chip(Chip& chip, const isa::Program& program, double clock_ghz);
void print_chip_summary(std::ostream& out, const ChipSummary& s);
nlohmann::json chip_summary_json(const ChipSummary& s);
// Total, per level and per tensor in microjoules, or a line saying the config reports no energy.
void print_energy(std::ostream& out, const std::optional<EnergyReport>& energy);

}  // namespace attnsim
