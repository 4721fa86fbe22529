#include "sim/chip_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "isa/opcode.h"

namespace attnsim {

uint64_t total(const TensorBytes& bytes) {
  uint64_t sum = 0;
  for (const auto& [name, b] : bytes) sum += b;
  return sum;
}

ChipSummary summarize_chip(Chip& chip, const isa::Program& program, double clock_ghz) {
  ChipSummary s;
  s.cores = chip.params().cores;
  s.cycles = chip.cycles();
  s.seconds = static_cast<double>(s.cycles) / (clock_ghz * 1e9);
  s.instructions = chip.instructions();
  s.kernels = chip.kernels();
  s.blocks = chip.blocks_;
  s.block_sram_bytes = chip.block_footprint_bytes();
  s.quantum_cycles = static_cast<uint64_t>(chip.params().quantum_cycles);
  s.l2_flushed_between_kernels = chip.params().flush_l2_between_kernels;
  const Hbm& dram = chip.dram();
  const Noc* noc = chip.noc();
  const L2Cache* l2 = chip.l2();
  s.has_l2 = l2 != nullptr;
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    const std::string& name = program.tensors[t].name;
    s.sm_l2_read[name] = noc ? noc->bytes_read_per_tensor[t] : dram.bytes_read_per_tensor[t];
    s.sm_l2_written[name] = noc ? noc->bytes_written_per_tensor[t] : dram.bytes_written_per_tensor[t];
    s.dram_read[name] = dram.transferred_read_per_tensor[t];
    s.dram_written[name] = dram.transferred_written_per_tensor[t];
    if (l2) {
      const uint64_t sector = static_cast<uint64_t>(l2->params().sector_bytes);
      s.l2_read_hit[name] = l2->read_hit_sectors[t] * sector;
      s.l2_read_miss[name] = l2->read_miss_sectors[t] * sector;
      s.dirty_at_kernel_end[name] = l2->flushed_dirty_bytes[t];
      s.resident_at_kernel_end[name] = l2->resident_bytes_at_kernel_end[t];
    }
  }
  if (l2) s.l2_lookup_read_miss_sectors = l2->lookup_read_miss_sectors;
  if (l2) s.l2_fabric_sectors = l2->fabric_read_sectors + l2->fabric_write_sectors + l2->fence_fabric_sectors;
  if (l2) s.l2_home_lookup_miss_sectors = l2->home_lookup_miss_sectors;
  if (l2) s.l2_coalesced_read_sectors = l2->coalesced_read_sectors;
  s.min_blocks_per_core = UINT64_MAX;
  for (auto& core : chip.cores()) {
    s.min_blocks_per_core = std::min(s.min_blocks_per_core, core->blocks_run);
    s.max_blocks_per_core = std::max(s.max_blocks_per_core, core->blocks_run);
    if (core->mxu()) s.mxu_flops += 2 * core->mxu()->macs;
    if (core->vpu()) s.vpu_element_ops += core->vpu()->element_ops;
    if (const IssueUnit* issue = core->issue()) {
      s.has_issue = true;
      s.issue_limits = issue->params().limit;
      s.warp_instructions += issue->warp_instructions;
      for (size_t op = 0; op < issue->by_opcode.size(); ++op)
        if (issue->by_opcode[op])
          s.warp_instructions_by_op[std::string(isa::mnemonic(static_cast<isa::Opcode>(op)))] +=
              issue->by_opcode[op];
      s.max_issue_busy_cycles = std::max(s.max_issue_busy_cycles, issue->busy_cycles);
    }
  }
  s.energy = chip.energy_report();
  return s;
}

namespace {

// "  q 1024  k 2048": each nonzero count after its name (a tensor's bytes, an opcode's instructions).
std::string by_name(const TensorBytes& bytes) {
  std::string text;
  for (const auto& [name, b] : bytes)
    if (b) text += fmt::format("  {} {}", name, b);
  return text;
}

}  // namespace

void print_chip_summary(std::ostream& out, const ChipSummary& s) {
  const double us = s.seconds * 1e6;
  out << fmt::format("whole chip        {} cores, {} kernel(s), {} thread blocks ({} to {} per core)\n",
                     s.cores, s.kernels.size(), s.blocks, s.min_blocks_per_core, s.max_blocks_per_core);
  for (const auto& k : s.kernels)
    out << fmt::format(
        "  kernel {:20} grid {}x{}x{}, occupancy {} blocks/core, {:.2f} waves, cycles {}..{}\n", k.name,
        k.grid[0], k.grid[1], k.grid[2], k.blocks_per_core, k.waves, k.start_cycle, k.end_cycle);
  out << fmt::format("time (whole chip) {} cycles = {:.3f} us\n", s.cycles, us);
  if (s.has_issue)
    out << fmt::format(
        "warp instructions {} (whole chip){}\n", s.warp_instructions,
        s.issue_limits
            ? fmt::format("; the busiest core's schedulers busy {:.1f}% of cycles (issuing; with "
                          "issue.mma_holds_schedulers, also held by products)",
                          s.cycles ? 100.0 * double(s.max_issue_busy_cycles) / double(s.cycles) : 0.0)
            : "; counted, not limiting time (issue.limit: false)");
  if (s.has_issue && !s.warp_instructions_by_op.empty())
    out << fmt::format("  by tile instruction:{}\n", by_name(s.warp_instructions_by_op));
  const char* link = s.has_l2 ? "SM<->L2" : "SM<->DRAM";
  out << fmt::format("{:9} read     {} bytes (whole chip)  by tensor:{}\n", link, total(s.sm_l2_read),
                     by_name(s.sm_l2_read));
  out << fmt::format("{:9} written  {} bytes (whole chip)  by tensor:{}\n", link, total(s.sm_l2_written),
                     by_name(s.sm_l2_written));
  if (s.has_l2) {
    const uint64_t hit = total(s.l2_read_hit), miss = total(s.l2_read_miss);
    out << fmt::format(
        "L2 read hits      {} bytes, misses {} bytes (hit rate {:.1f}%)  misses by tensor:{}\n", hit, miss,
        hit + miss ? 100.0 * double(hit) / double(hit + miss) : 0.0, by_name(s.l2_read_miss));
    if (s.l2_coalesced_read_sectors)
      out << fmt::format(
          "L2 coalesced      {} read sectors (whole chip) rode on another SM's request in flight: read "
          "from L2 without a lookup of their own, in neither the hits nor the misses\n",
          s.l2_coalesced_read_sectors);
  }
  out << fmt::format("DRAM read         {} bytes (whole chip)  by tensor:{}\n", total(s.dram_read),
                     by_name(s.dram_read));
  out << fmt::format("DRAM written      {} bytes (whole chip, evictions during kernels)  by tensor:{}\n",
                     total(s.dram_written), by_name(s.dram_written));
  if (s.has_l2)
    out << fmt::format(
        "L2 dirty at end   {} bytes (left in L2 when kernels ended; {})\n", total(s.dirty_at_kernel_end),
        s.l2_flushed_between_kernels ? "flushed before the next kernel, not counted as DRAM writes"
                                     : "kept for the next kernel");
  if (s.has_l2 && (s.l2_fabric_sectors || s.l2_lookup_read_miss_sectors))
    out << fmt::format(
        "L2 partitions     read lookup misses {} sectors (in the partition a read looked up first: the "
        "core's own with copies of far lines), fabric {} sectors (between partitions: copies fetched, "
        "stores sent to a far home; whole chip)\n",
        s.l2_lookup_read_miss_sectors, s.l2_fabric_sectors);
  if (s.seconds > 0)
    out << fmt::format("achieved          SM<->L2 {:.0f} GB/s, DRAM {:.0f} GB/s\n",
                       double(total(s.sm_l2_read) + total(s.sm_l2_written)) / s.seconds / 1e9,
                       double(total(s.dram_read) + total(s.dram_written)) / s.seconds / 1e9);
  print_energy(out, s.energy);
}

void print_energy(std::ostream& out, const std::optional<EnergyReport>& energy) {
  if (!energy) {
    out << "energy            not reported: the config has no energy: section (docs/energy.md)\n";
    return;
  }
  out << fmt::format("energy ({})  {:.6g} uJ dynamic; by level:", energy->scope, energy->total_pj() * 1e-6);
  for (const auto& l : energy->levels) out << fmt::format("  {} {:.6g}", l.name, l.pj() * 1e-6);
  out << " (uJ)\n";
  std::string by_tensor;
  for (const auto& [tensor, pj] : energy_per_tensor(*energy))
    if (pj > 0) by_tensor += fmt::format("  {} {:.6g}", tensor, pj * 1e-6);
  if (!by_tensor.empty())
    out << "energy by tensor  " << by_tensor.substr(2)
        << " (uJ; memory levels only: DRAM, L2, SM<->L2 and the SRAM's DMA share)\n";
}

nlohmann::json chip_summary_json(const ChipSummary& s) {
  nlohmann::json out = {{"scope", "whole chip"},
                        {"cores", s.cores},
                        {"cycles", s.cycles},
                        {"simulated_seconds", s.seconds},
                        {"kernels", kernel_reports_json(s.kernels)},
                        {"sm_l2_bytes_read", total(s.sm_l2_read)},
                        {"sm_l2_bytes_written", total(s.sm_l2_written)},
                        {"sm_l2_bytes_read_per_tensor", s.sm_l2_read},
                        {"sm_l2_bytes_written_per_tensor", s.sm_l2_written},
                        {"l2_read_hit_bytes_per_tensor", s.l2_read_hit},
                        {"l2_read_miss_bytes_per_tensor", s.l2_read_miss},
                        {"dram_bytes_read", total(s.dram_read)},
                        {"dram_bytes_written", total(s.dram_written)},
                        {"dram_bytes_read_per_tensor", s.dram_read},
                        {"dram_bytes_written_per_tensor", s.dram_written},
                        {"l2_dirty_bytes_at_kernel_end_per_tensor", s.dirty_at_kernel_end},
                        {"l2_resident_bytes_at_kernel_end_per_tensor", s.resident_at_kernel_end}};
  if (s.has_issue) {
    out["warp_instructions"] = s.warp_instructions;
    out["warp_instructions_by_op"] = s.warp_instructions_by_op;
  }
  if (s.energy) out["energy"] = s.energy->to_json();
  return out;
}

}  // namespace attnsim
