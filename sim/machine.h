// A Machine is the set of SystemC models one YAML config describes, wired together. Build it once per
// process (SystemC elaborates once), load a Program, run.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chip/chip.h"
#include "isa/program.h"
#include "models/alu/alu.h"
#include "models/dram/dram.h"
#include "models/mac/mac.h"
#include "models/regfile/regfile.h"
#include "models/sequencer/sequencer.h"
#include "sim/config.h"

namespace attnsim {

void register_builtin_models();

class Machine {
 public:
  explicit Machine(const MachineConfig& config);

  const std::string& name() const { return name_; }
  Dtype dtype() const { return dtype_; }
  double clock_ghz() const { return clock_ghz_; }
  double clock_base_ghz() const { return clock_base_ghz_; }  // 0 when the config does not say
  // The block planner compare uses when no block size is given: "paper" or "hardware" (traces/planner.h).
  const std::string& planner() const { return planner_; }
  // 16 GiB: two thirds of the development machine's memory, far above any check compare makes by default
  // (1.1 GB at N = 8192).
  static constexpr int64_t kDefaultMaxValueBytes = int64_t{16} << 30;

  // The machine keeps a reference: `program` must outlive run(). A temporary would dangle, so it is refused.
  void load(const isa::Program& program, bool symbolic, bool timing_only = false);
  void load(isa::Program&&, bool, bool = false) = delete;
  void run();  // sc_start() until the program completes; rethrows execution errors
  // A whole chip's core clock for the next load() and run(): the cores' cycles keep their length in cycles,
  // DRAM's timing (in ns) is converted anew. For validating against a kernel measured at another clock.
  void set_clock_ghz(double ghz);
  // Where the next load() puts the first tensor in DRAM (hbm.first_tensor_address, bytes): the L2's set and
  // partition hashes see the addresses. Only a chip's layout changes.
  void set_first_tensor_address(uint64_t address);
  uint64_t first_tensor_address() const { return hbm_ ? hbm_->params().first_tensor_address : 0; }
  // How the MXU of every core is fed from now on (MxuUnit::Feed: mma.sync's or wgmma's path on one GPU);
  // throws std::logic_error on a machine without an MXU.
  void set_mxu_feed(const MxuUnit::Feed& feed);
  // Whether every core's MXU and VPU results reach their readers after the config's result latencies (the
  // measured latencies of tensor-core kernel code) or at once, from now on. Only a chip's cores change.
  void set_result_latencies(bool as_configured);
  // Whether every core's issue unit limits time as configured (`code_as_costed`: the kernel runs the
  // tensor-core code its costs describe) and its products hold the schedulers and yield to other
  // instructions as configured (`synchronous_mma`: mma.sync, not wgmma), from now on. Only a chip's cores
  // change; no issue: section, nothing to change.
  void set_issue_limits(bool code_as_costed, bool synchronous_mma);
  // Which waiting block each core serves first from now on: `priority`, or the config's (nullopt). Only a
  // chip's cores change.
  void set_issue_priority(std::optional<ChipParams::IssuePriority> priority);
  // chip.older_preempts, from the next load on (a whole chip).
  void set_older_preempts(bool on);
  // chip.share_units, from the next load on (a whole chip).
  void set_share_units(bool on);

  bool has_scalar_units() const { return dram_ != nullptr; }
  bool has_tile_units() const { return hbm_ != nullptr; }
  // A whole chip (a `chip:` section): many cores, the network, L2 and DRAM; run() then runs the chip.
  bool is_chip() const { return chip_ != nullptr; }
  bool chip_loaded() const { return chip_loaded_; }
  Chip* chip() { return chip_.get(); }
  L2Cache* l2() { return l2_.get(); }
  Noc* noc() { return noc_.get(); }
  Dram& dram() { return *dram_; }
  RegisterFile& regfile() { return *regfile_; }
  Hbm* hbm() { return hbm_.get(); }
  Sram* sram() { return sram_.get(); }
  TileRegisterFile* tile_regs() { return tile_regs_.get(); }
  MxuUnit* mxu() { return mxu_.get(); }
  VpuUnit* vpu() { return vpu_.get(); }
  DmaEngine* dma() { return dma_.get(); }
  IssueUnit* issue() { return issue_.get(); }
  Sequencer& sequencer() { return *sequencer_; }
  const nlohmann::json& effective_config() const { return effective_; }
  const std::vector<ParamDoc>& param_docs() const { return docs_; }
  nlohmann::json stats_json() const;
  // The config's per-access energies (`energy:`); none when the config has no such section.
  const std::optional<EnergyParams>& energy_params() const { return energy_; }
  // The last run's energy from the models' counts: the whole chip's, or one core's (tile or scalar units).
  std::optional<EnergyReport> energy_report() const;

 private:
  void check_value_memory(const isa::Program& program) const;
  std::string name_;
  Dtype dtype_ = Dtype::F32;
  double clock_ghz_ = 1.0;
  ChipParams::IssuePriority configured_priority_ = ChipParams::IssuePriority::Oldest;
  double clock_base_ghz_ = 0.0;
  std::string planner_ = "paper";
  int64_t max_value_bytes_ = kDefaultMaxValueBytes;
  std::optional<EnergyParams> energy_;
  std::unique_ptr<Dram> dram_;
  std::unique_ptr<RegisterFile> regfile_;
  std::unique_ptr<MacUnit> mac_;
  std::unique_ptr<Alu> alu_;
  std::unique_ptr<Hbm> hbm_;
  std::unique_ptr<Sram> sram_;
  std::unique_ptr<DmaEngine> dma_;
  std::unique_ptr<MxuUnit> mxu_;
  std::unique_ptr<VpuUnit> vpu_;
  std::unique_ptr<TileRegisterFile> tile_regs_;
  std::unique_ptr<IssueUnit> issue_;
  std::unique_ptr<Sequencer> sequencer_;
  std::unique_ptr<L2Cache> l2_;
  std::unique_ptr<Noc> noc_;
  std::unique_ptr<Chip> chip_;
  bool chip_loaded_ = false;  // the loaded program runs on the chip (a tile program on a chip config)
  nlohmann::json effective_;
  std::vector<ParamDoc> docs_;
};

}  // namespace attnsim
