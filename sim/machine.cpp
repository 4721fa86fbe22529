#include "sim/machine.h"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "models/common/checked.h"
#include "models/common/registry.h"

namespace attnsim {

void register_builtin_models() {
  static bool done = false;
  if (done) return;
  done = true;
  register_dram_models();
  register_regfile_models();
  register_mac_models();
  register_alu_models();
  register_hbm_models();
  register_sram_models();
  register_dma_models();
  register_mxu_models();
  register_vpu_models();
  register_tile_regfile_models();
  register_l2_models();
  register_noc_models();
  register_issue_models();
}

Machine::Machine(const MachineConfig& config) {
  register_builtin_models();
  ParamReader top(config.root, "", config.source);
  name_ = top.get<std::string>("name", "unnamed", "", "machine name shown in reports");
  top.get<std::string>("description", "", "", "one line about the machine and its sources");
  std::string dtype = top.choice("dtype", "f32", {"f16", "bf16", "f32", "f64"},
                                 "register / compute precision; tensors default to it");
  dtype_ = *parse_dtype(dtype);
  clock_ghz_ =
      top.get<double>("clock_ghz", 1.0, "GHz", "core clock: converts cycles to seconds", 1e-6, 1000.0);
  clock_base_ghz_ = top.get<double>(
      "clock_base_ghz", 0.0, "GHz",
      "the clock under Nsight Compute's --clock-control base, at which validation data is measured; "
      "validate simulates those rows at it (0: unknown, clock_ghz is used)",
      0.0, 1000.0);
  max_value_bytes_ = top.get<int64_t>(
      "max_value_bytes", kDefaultMaxValueBytes, "bytes",
      "host memory the tensors' float64 values may take in value mode (8 bytes an element); a run that "
      "needs more is refused before anything is allocated (timing-only runs keep no values)",
      1, int64_t{1} << 50);
  planner_ =
      top.choice("planner", "paper", {"paper", "hardware"},
                 "block sizes compare plans when none are given: paper (B_c = M/4d, B_r = min(B_c, d)) "
                 "or hardware (powers of two, multiples of the MXU tile, the largest that fit)");

  const BuildContext context{clock_ghz_};
  // A machine has the units its config names: the toy machines dram/regfile/mac/alu, the tile machines
  // hbm/sram/dma/mxu/vpu (or both sets).
  std::vector<ParamReader> sections;
  auto section = [&](const char* key, const char* description) -> ParamReader* {
    if (!top.has(key)) {
      top.child(key, description);  // declared, so the key is known; absent means no such unit
      return nullptr;
    }
    sections.push_back(top.child(key, description));
    return &sections.back();
  };
  sections.reserve(16);
  if (auto* p = section("dram", "scalar off-chip memory (toy machines)"))
    dram_ = Registry<Dram>::instance().create("dram", *p, "word", context);
  if (auto* p = section("regfile", "scalar register file (toy machines)"))
    regfile_ = Registry<RegisterFile>::instance().create("regfile", *p, "regfile", context);
  if (auto* p = section("mac", "scalar multiply-accumulate unit (toy machines)"))
    mac_ = Registry<MacUnit>::instance().create("mac", *p, "mac", context);
  if (auto* p = section("alu", "scalar ALU (toy machines)"))
    alu_ = Registry<Alu>::instance().create("alu", *p, "alu", context);
  if (auto* p = section("hbm", "off-chip HBM (tile machines)"))
    hbm_ = Registry<Hbm>::instance().create("hbm", *p, "hbm", context);
  if (auto* p = section("sram", "on-chip SRAM for buffers (tile machines)"))
    sram_ = Registry<Sram>::instance().create("sram", *p, "scratchpad", context);
  if (auto* p = section("dma", "DMA engine between HBM and SRAM (tile machines)"))
    dma_ = Registry<DmaEngine>::instance().create("dma", *p, "queue", context);
  if (auto* p = section("mxu", "systolic matrix unit (tile machines)"))
    mxu_ = Registry<MxuUnit>::instance().create("mxu", *p, "systolic", context);
  if (auto* p = section("vpu", "vector unit (tile machines)"))
    vpu_ = Registry<VpuUnit>::instance().create("vpu", *p, "simd", context);
  if (auto* p = section("tile_regs", "tile register file: accumulators / vector registers (tile machines)"))
    tile_regs_ = Registry<TileRegisterFile>::instance().create("tile_regs", *p, "vector_regs", context);
  if (auto* p = section("issue", "a GPU core's warp schedulers: the issue cost of tile instructions"))
    issue_ = Registry<IssueUnit>::instance().create("issue", *p, "warp_schedulers", context);
  if (auto* p = section("l2", "shared L2 in front of DRAM (whole chips)"))
    l2_ = Registry<L2Cache>::instance().create("l2", *p, "sectored", context);
  if (auto* p = section("noc", "on-chip network between the cores and L2 (whole chips)"))
    noc_ = Registry<Noc>::instance().create("noc", *p, "crossbar", context);
  if (auto* p = section("energy", "per-access energies for the energy report (docs/energy.md)"))
    energy_ = read_energy_params(*p);
  ChipParams chip_params;
  ParamReader* chip_section = section("chip", "a whole chip: cores, block scheduling, temporal decoupling");
  if (chip_section) register_chip_params(*chip_section, chip_params);
  configured_priority_ = chip_params.issue_priority;
  ParamReader seq = top.child("sequencer", "instruction issue");
  Sequencer::Params seq_params;
  seq_params.clock_ghz = clock_ghz_;
  register_sequencer_params(seq, seq_params);
  for (const ParamReader& r : sections) r.finish();
  seq.finish();
  top.finish();
  if (!dram_ && !hbm_)
    throw InputError(config.source->file, {}, "a machine needs a dram: (scalar) or hbm: (tile) section");
  SequencerUnits units{dram_.get(), regfile_.get(), mac_.get(), alu_.get(),       hbm_.get(),  sram_.get(),
                       dma_.get(),  mxu_.get(),     vpu_.get(), tile_regs_.get(), issue_.get()};
  sequencer_ = std::make_unique<Sequencer>("sequencer", seq_params, units);
  if (chip_section) {
    if (!hbm_ || !sram_ || !dma_)
      throw InputError(config.source->file, {},
                       "a chip: needs hbm:, sram: and dma: sections (one core's units)");
    if (l2_ && l2_->attached_cores() != 0 && l2_->attached_cores() != static_cast<size_t>(chip_params.cores))
      throw InputError(config.source->file, {},
                       fmt::format("l2.core_partitions: {} cores named, chip.cores is {}",
                                   l2_->attached_cores(), chip_params.cores));
    chip_params.clock_ghz = clock_ghz_;
    chip_params.blocking_issue = seq_params.issue == Sequencer::Issue::Blocking;
    chip_ = std::make_unique<Chip>("chip", chip_params, *sram_, *dma_, mxu_.get(), vpu_.get(),
                                   tile_regs_.get(), issue_.get(), *hbm_, l2_.get(), noc_.get());
    chip_->set_energy(energy_);
  } else if (l2_ || noc_) {
    throw InputError(config.source->file, {}, "l2: and noc: belong to a whole chip: add a chip: section");
  }
  effective_ = top.effective();
  docs_ = top.docs();
}

void Machine::load(const isa::Program& program, bool symbolic, bool timing_only) {
  if (!timing_only) check_value_memory(program);
  if (chip_ && (program.has_tiles() || !program.buffers.empty())) {
    if (symbolic)
      throw InputError(program.file, {}, "--symbolic is for scalar traces; tile programs carry numbers");
    chip_->load(program, dtype_, timing_only);
    chip_loaded_ = true;
    return;
  }
  chip_loaded_ = false;
  sequencer_->load(program, dtype_, symbolic, timing_only);
}

// Value mode keeps every tensor as float64 on the host: refuse a program whose tensors would not fit the
// limit before any is allocated (a 60000 x 60000 tensor once ended in std::bad_alloc, exit 3).
void Machine::check_value_memory(const isa::Program& program) const {
  constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();
  uint64_t total = 0, largest = 0;
  std::string largest_name;
  for (const auto& decl : program.tensors) {
    const uint64_t bytes = try_mul<uint64_t>(static_cast<uint64_t>(decl.elements()), 8).value_or(kUnbounded);
    total = try_add<uint64_t>(total, bytes).value_or(kUnbounded);
    if (bytes > largest) largest = bytes, largest_name = decl.name;
  }
  if (total <= static_cast<uint64_t>(max_value_bytes_)) return;
  throw InputError(
      program.file, {},
      fmt::format("value mode needs {} bytes of host memory for the tensors' float64 values (the "
                  "largest, {}, {} bytes) but max_value_bytes is {}; run timing-only (--values "
                  "off, or --timing-only with run) or raise the limit with -p max_value_bytes=N",
                  total, largest_name, largest, max_value_bytes_));
}

void Machine::set_clock_ghz(double ghz) {
  if (!chip_) throw std::logic_error("Machine::set_clock_ghz: only a whole chip's clock can change");
  if (!(ghz >= 1e-6 && ghz <= 1000.0))
    throw InputError("", {}, fmt::format("clock of {} GHz: expected 1e-06 to 1000", ghz));
  hbm_->set_core_clock_ghz(ghz);
  if (chip_->l2()) chip_->l2()->set_core_clock_ghz(ghz);
  chip_->set_clock_ghz(ghz);
  clock_ghz_ = ghz;
}

void Machine::set_first_tensor_address(uint64_t address) {
  if (!chip_) throw std::logic_error("Machine::set_first_tensor_address: only a whole chip's layout changes");
  hbm_->set_first_tensor_address(address);
}

void Machine::set_mxu_feed(const MxuUnit::Feed& feed) {
  if (!mxu_) throw std::logic_error("Machine::set_mxu_feed: the machine has no MXU");
  mxu_->set_feed(feed);
  if (!chip_) return;
  for (auto& core : chip_->cores())
    if (core->mxu()) core->mxu()->set_feed(feed);
}

void Machine::set_result_latencies(bool as_configured) {
  if (!chip_) throw std::logic_error("Machine::set_result_latencies: only a whole chip's cores change");
  const int64_t mxu_latency = as_configured && mxu_ ? mxu_->params().result_latency : 0;
  std::array<int64_t, kVpuOpCount> vpu_latencies{};
  double per_column = 0;
  if (as_configured && vpu_) {
    vpu_latencies = vpu_->params().result_latency;
    per_column = vpu_->params().reduction_result_latency_per_column;
  }
  for (auto& core : chip_->cores()) {
    if (core->mxu()) core->mxu()->set_result_latency(mxu_latency);
    if (core->vpu()) core->vpu()->set_result_latencies(vpu_latencies, per_column);
  }
}

void Machine::set_issue_limits(bool code_as_costed, bool synchronous_mma) {
  if (!chip_) throw std::logic_error("Machine::set_issue_limits: only a whole chip's cores change");
  if (!issue_) return;
  const bool limit = code_as_costed && issue_->params().limit;
  const bool hold = synchronous_mma && issue_->params().mma_holds_schedulers;
  const double yield = synchronous_mma ? issue_->params().mma_cycles_per_other_instruction : 0.0;
  for (auto& core : chip_->cores()) core->issue()->set_limits(limit, hold, yield);
}

void Machine::set_older_preempts(bool on) {
  if (!chip_) throw std::logic_error("Machine::set_older_preempts: only a whole chip's cores change");
  chip_->set_older_preempts(on);
}

void Machine::set_share_units(bool on) {
  if (!chip_) throw std::logic_error("Machine::set_share_units: only a whole chip's cores change");
  chip_->set_share_units(on);
}

void Machine::set_issue_priority(std::optional<ChipParams::IssuePriority> priority) {
  if (!chip_) throw std::logic_error("Machine::set_issue_priority: only a whole chip's cores change");
  chip_->set_issue_priority(priority.value_or(configured_priority_));
}

void Machine::run() {
  if (chip_loaded_) {
    chip_->run();
    return;
  }
  sequencer_->start();
  sc_core::sc_start();
  sequencer_->rethrow_if_failed();
}

nlohmann::json Machine::stats_json() const {
  if (chip_loaded_) return chip_->stats_json();
  nlohmann::json out = nlohmann::json::object();
  for (const Component* c : std::initializer_list<const Component*>{
           sequencer_.get(), dram_.get(), regfile_.get(), mac_.get(), alu_.get(), hbm_.get(), sram_.get(),
           dma_.get(), mxu_.get(), vpu_.get(), tile_regs_.get(), issue_.get()})
    if (c) out[c->stats().name()] = c->stats().to_json();
  return out;
}

namespace {

// One core of a tile machine: the level behind its SRAM is the config's `hbm` (on the single-SM GPU
// presets it stands for SM <-> L2 traffic, so it is not called DRAM), charged at the DRAM figure; SRAM by
// tensor for the DMA's share.
void tile_energy_levels(const EnergyParams& e, const Hbm& hbm, const Sram* sram, const DmaEngine* dma,
                        const TileRegisterFile* regs, const MxuUnit* mxu, const VpuUnit* vpu,
                        std::vector<EnergyLevel>& out) {
  EnergyLevel dram{"hbm", "bytes", 8 * e.dram_pj_per_bit, 0, {}};
  EnergyLevel buffers{"sram", "bytes", e.sram_pj_per_byte, 0, {}};
  for (size_t t = 0; t < hbm.tensor_names.size(); ++t) {
    const std::string& name = hbm.tensor_names[t];
    dram.count_per_tensor[name] = hbm.transferred_read_per_tensor[t] + hbm.transferred_written_per_tensor[t];
    dram.count += dram.count_per_tensor[name];
    if (dma)
      buffers.count_per_tensor[name] =
          t < dma->sram_bytes_per_tensor.size() ? dma->sram_bytes_per_tensor[t] : 0;
  }
  out.push_back(dram);
  if (sram) buffers.count = sram->bytes_read + sram->bytes_written, out.push_back(buffers);
  if (regs)
    out.push_back({"regfile", "bytes", e.regfile_pj_per_byte, regs->bytes_read + regs->bytes_written, {}});
  if (mxu) out.push_back({"mxu", "MACs", e.mac_pj, mxu->macs, {}});
  if (vpu) out.push_back({"vpu", "element ops", e.vector_op_pj, vpu->element_ops, {}});
}

// A scalar (toy) machine: words of each tensor's dtype, register accesses of the machine's dtype.
void scalar_energy_levels(const EnergyParams& e, const Dram& dram, const RegisterFile* regs,
                          const MacUnit* mac, const Alu* alu, Dtype dtype, const char* level_name,
                          std::vector<EnergyLevel>& out) {
  EnergyLevel memory{level_name, "bytes", 8 * e.dram_pj_per_bit, 0, {}};
  const auto& names = dram.tensor_names();
  for (size_t t = 0; t < names.size() && t < dram.reads_per_tensor.size(); ++t) {
    const uint64_t words = dram.reads_per_tensor[t] + dram.writes_per_tensor[t];
    memory.count_per_tensor[names[t]] = words * dtype_bytes(dram.dtype(static_cast<int>(t)));
    memory.count += memory.count_per_tensor[names[t]];
  }
  out.push_back(memory);
  if (regs)
    out.push_back(
        {"regfile", "bytes", e.regfile_pj_per_byte, (regs->reads + regs->writes) * dtype_bytes(dtype), {}});
  if (mac) out.push_back({"mac", "MACs", e.mac_pj, mac->ops, {}});
  if (alu) out.push_back({"alu", "ops", e.vector_op_pj, alu->ops, {}});
}

}  // namespace

std::optional<EnergyReport> Machine::energy_report() const {
  if (!energy_) return std::nullopt;
  if (chip_loaded_) return chip_->energy_report();
  EnergyReport report{"one core", {}};
  if (hbm_)
    tile_energy_levels(*energy_, *hbm_, sram_.get(), dma_.get(), tile_regs_.get(), mxu_.get(), vpu_.get(),
                       report.levels);
  if (dram_)
    scalar_energy_levels(*energy_, *dram_, regfile_.get(), mac_.get(), alu_.get(), dtype_,
                         hbm_ ? "scalar_dram" : "dram", report.levels);
  return report;
}

}  // namespace attnsim
