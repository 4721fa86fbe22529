#include "chip/chip.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "isa/init.h"
#include "models/common/checked.h"
#include "models/common/splitmix.h"

namespace attnsim {

ChipCore::ChipCore(sc_core::sc_module_name instance, int id, const Sram& sram, const DmaEngine& dma,
                   const MxuUnit* mxu, const VpuUnit* vpu, const TileRegisterFile* tile_regs,
                   const IssueUnit* issue)
    : Component(instance), id_(id) {
  sram_ = std::make_unique<Sram>("sram", sram.params());
  dma_ = std::make_unique<DmaEngine>("dma", dma.params());
  if (mxu) mxu_ = std::make_unique<MxuUnit>("mxu", mxu->params());
  if (vpu) vpu_ = std::make_unique<VpuUnit>("vpu", vpu->params());
  if (tile_regs) tile_regs_ = std::make_unique<TileRegisterFile>("tile_regs", tile_regs->params());
  if (issue) issue_ = std::make_unique<IssueUnit>("issue", issue->params());
  stats_.add(&blocks_run, "blocks", "blocks", "thread blocks this core ran");
  stats_.add(&busy_until, "last_block_end", "cycles", "cycle its last block completed");
}

Chip::Chip(sc_core::sc_module_name instance, const ChipParams& params, const Sram& sram, const DmaEngine& dma,
           const MxuUnit* mxu, const VpuUnit* vpu, const TileRegisterFile* tile_regs, const IssueUnit* issue,
           Hbm& hbm, L2Cache* l2, Noc* noc)
    : Component(instance), params_(params), hbm_(hbm), l2_(l2), noc_(noc) {
  for (int64_t c = 0; c < params_.cores; ++c)
    cores_.push_back(std::make_unique<ChipCore>(("core_" + std::to_string(c)).c_str(), static_cast<int>(c),
                                                sram, dma, mxu, vpu, tile_regs, issue));
  state_ = std::vector<CoreState>(static_cast<size_t>(params_.cores));
  for (int64_t c = 0; c < params_.cores; ++c) {
    const int core = static_cast<int>(c);
    sc_core::sc_spawn([this, core] { core_thread(core); }, ("core_thread_" + std::to_string(c)).c_str());
  }
  SC_THREAD(conductor);
  memory_ = &hbm_;
  if (l2_) l2_->set_next(&hbm_), memory_ = l2_;
  if (noc_) noc_->set_next(memory_), memory_ = noc_;
  period_ = sc_core::sc_time(1.0 / params_.clock_ghz, sc_core::SC_NS);
  stats_.add(&cycles_, "cycles", "cycles", "whole chip: first block's start to the last block's end");
  stats_.add(&instructions_, "instructions", "instructions", "instructions executed, all cores");
  stats_.add(&blocks_, "blocks", "blocks", "thread blocks run, all kernels");
  stats_.add(&quanta_, "quanta", "quanta", "quantum rounds of the conductor (temporal decoupling)");
  stats_.add(&footprint_, "block_sram_bytes", "bytes", "SRAM one thread block takes (aligned buffers)");
  stats_.add_formula([this] { return kernel_reports_json(kernel_reports_); }, "kernels", "",
                     "each kernel launched: grid, occupancy (blocks per core), waves, start and end cycles");
}

nlohmann::json kernel_reports_json(const std::vector<KernelReport>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kernels)
    out.push_back({{"name", k.name},
                   {"grid", k.grid},
                   {"blocks", k.blocks},
                   {"blocks_per_core", k.blocks_per_core},
                   {"waves", k.waves},
                   {"start_cycle", k.start_cycle},
                   {"end_cycle", k.end_cycle},
                   {"warp_instructions", k.warp_instructions}});
  return out;
}

void Chip::load(const isa::Program& program, Dtype dtype, bool timing_only) {
  program_ = &program;
  dtype_ = dtype;
  values_ = !timing_only;
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  tensors_.assign(program.tensors.size(), {});
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    const auto& decl = program.tensors[t];
    tensors_[t].dtype = decl.dtype.value_or(dtype);
    tensors_[t].coherent = decl.coherent;
    names.push_back(decl.name);
    sizes.push_back(static_cast<uint64_t>(decl.elements()) * dtype_bytes(tensors_[t].dtype));
  }
  hbm_.use_calendar(64);
  std::vector<uint64_t> bases = hbm_.allocate(names, sizes, program.file);
  for (size_t t = 0; t < tensors_.size(); ++t) {
    tensors_[t].base = bases[t];
    if (values_) tensors_[t].values = isa::materialize(program.tensors[t], tensors_[t].dtype);
  }
  if (l2_) l2_->reset(names);
  if (noc_) noc_->reset(names, static_cast<int>(params_.cores));

  std::vector<BufferRequest> sram_requests, reg_requests;
  for (const auto& decl : program.buffers) {
    const uint64_t bytes =
        static_cast<uint64_t>(decl.rows * decl.cols) * dtype_bytes(decl.dtype.value_or(dtype));
    (decl.space == isa::BufferDecl::Space::Regs ? reg_requests : sram_requests)
        .push_back({decl.name, bytes, decl.loc});
  }
  for (auto& core : cores_) {
    sram_offsets_ = core->sram().allocate(sram_requests, program.file);
    if (!reg_requests.empty()) {
      if (!core->tile_regs())
        throw InputError(
            program.file, reg_requests.front().loc,
            "buffer '" + reg_requests.front().name + "' is in `regs` but the machine has no tile_regs");
      reg_bases_ = core->tile_regs()->allocate(reg_requests, program.file);
    }
  }
  footprint_ = cores_.front()->sram().allocated_bytes;
  for (size_t c = 0; c < cores_.size(); ++c) {
    ChipCore& core = *cores_[c];
    TileUnits units{&core.sram(),     &core.dma(), core.mxu(),   core.vpu(),
                    core.tile_regs(), memory_,     core.issue(), &locks_};
    state_[c].tile = std::make_unique<TileCore>(units, tensors_, static_cast<int>(c));
    state_[c].tile->reset_units();
    state_[c].tile->set_older_preempts(params_.older_preempts && !params_.blocking_issue);
    state_[c].tile->set_unit_sharing(params_.share_units && !params_.blocking_issue,
                                     params_.share_older_weight);
    state_[c].slots.clear();
    core.blocks_run = core.busy_until = 0;
  }
  locks_.clear();
  source_ = std::make_unique<BlockSource>(program);
  have_lookahead_ = source_done_ = false;
  kernel_ = -1;
  resident_ = 0;
  kernel_reports_.clear();
  block_records_.clear();
  cycles_ = instructions_ = blocks_ = quanta_ = 0;
}

void Chip::run() {
  start_pending_ = true;
  start_event_.notify(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  if (error_) std::rethrow_exception(error_);
}

std::array<uint64_t, isa::kOpcodeCount> Chip::per_opcode() const {
  std::array<uint64_t, isa::kOpcodeCount> out{};
  for (const CoreState& s : state_)
    if (s.tile)
      for (size_t op = 0; op < out.size(); ++op) out[op] += s.tile->per_opcode()[op];
  return out;
}

int64_t Chip::occupancy(int kernel) const {
  if (kernel >= 0 && static_cast<size_t>(kernel) < kernel_occupancy_.size() && kernel_occupancy_[kernel] > 0)
    return kernel_occupancy_[kernel];
  if (params_.blocks_per_core > 0) return params_.blocks_per_core;
  int64_t by_sram =
      footprint_ ? static_cast<int64_t>(params_.core_sram_bytes / footprint_) : params_.max_blocks_per_core;
  return std::max<int64_t>(1, std::min(params_.max_blocks_per_core, by_sram));
}

bool Chip::assign_block(int core, Slot& slot, uint64_t at) {
  if (!blocks_left()) return false;
  const size_t index = static_cast<size_t>(&slot - state_[core].slots.data());
  slot.work = std::move(lookahead_);
  have_lookahead_ = false;
  slot.ctx =
      state_[core].tile->context(*program_, dtype_, values_, index * footprint_, &sram_offsets_, &reg_bases_);
  slot.ctx.next_issue.fill(at);
  slot.ctx.end = at;
  const isa::KernelDecl& kernel = source_->kernels()[static_cast<size_t>(kernel_)];
  slot.ctx.take_code(kernel);
  slot.segment = 0;
  slot.position = slot.work.segments.empty() ? 0 : slot.work.segments.front().begin;
  slot.busy = true;
  slot.age = blocks_;
  slot.ctx.age = blocks_;
  slot.started = at;
  slot.launch = launch_index();
  ++resident_;
  ++blocks_;
  ++cores_[core]->blocks_run;
  if (slot.work.segments.empty()) {  // an empty block ends where it starts
    slot.busy = false;
    slot.free_at = at;
    if (record_blocks_) block_records_.push_back({launch_index(), slot.work.index, core, at, at});
    --resident_;
    return true;
  }
  prepare(core, slot);
  return true;
}

// Kernels run one after another, so a kernel's warp instructions are the cores' count at its end less
// that at its start.
uint64_t Chip::warp_instructions_issued() const {
  uint64_t total = 0;
  for (const auto& core : cores_)
    if (const IssueUnit* issue = core->issue()) total += issue->warp_instructions;
  return total;
}

// No block resident and none left to hand out. A core can have every slot free with blocks left when its
// blocks issued their last instructions but end after the quantum: the kernel goes on.
bool Chip::kernel_finished() {
  return resident_ == 0 && !blocks_left();
}

void Chip::start_kernel(uint64_t at) {
  if (!fetch_lookahead()) return;
  kernel_ = lookahead_.kernel;
  kernel_start_ = at;
  const isa::KernelDecl& decl = source_->kernels()[static_cast<size_t>(kernel_)];
  const int64_t per_core = occupancy(kernel_);
  KernelReport report;
  report.name = decl.name;
  report.grid = decl.grid;
  report.blocks = decl.blocks();
  report.blocks_per_core = per_core;
  report.waves = static_cast<double>(report.blocks) / static_cast<double>(per_core * params_.cores);
  report.start_cycle = at;
  kernel_reports_.push_back(report);
  warp_instructions_before_kernel_ = warp_instructions_issued();
  for (auto& s : state_) {
    s.slots.assign(static_cast<size_t>(per_core), Slot{});
    for (auto& slot : s.slots) slot.free_at = at;
  }
  // The first wave goes out breadth first: one block per core, then a second per core, as CUDA's block
  // scheduler fills the SMs.
  for (size_t slot = 0; slot < static_cast<size_t>(per_core); ++slot)
    for (size_t c = 0; c < state_.size(); ++c)
      if (!assign_block(static_cast<int>(c), state_[c].slots[slot], at)) return;
}

// Decodes the slot's instruction at `position` and finds when its operands are ready.
void Chip::prepare(int core, Slot& slot) {
  const BlockSegment& seg = slot.work.segments[slot.segment];
  TileCore& tile = *state_[core].tile;
  tile.decode(*program_, seg.chunk->instructions[slot.position], seg.chunk->tiles, slot.next);
  // A repeated block runs its template's instructions on its own tiles of each tensor.
  if (!slot.work.tensor_shift.empty())
    for (size_t k = 0; k < slot.next.count; ++k) {
      TileOperand& o = slot.next.ops[k];
      if (o.storage >= 0 && !o.is_buffer) o.offset += slot.work.tensor_shift[static_cast<size_t>(o.storage)];
    }
  slot.ready = tile.ready_time(slot.next, slot.ctx);
}

// The resident block to run next, and the cycle its instruction starts: the one whose instruction its unit
// (MXU, VPU, a DMA queue slot) would accept first; of several that could start at the same cycle, the
// oldest block (oldest), or the one whose instruction was ready first, then the oldest (ready). fifo: the
// one whose instruction issued first; it books its unit even while it waits for its operands.
Chip::Slot* Chip::next_to_issue(int core, uint64_t& start) {
  const TileCore& tile = *state_[core].tile;
  const ChipParams::IssuePriority priority = params_.issue_priority;
  const bool fifo = priority == ChipParams::IssuePriority::Fifo;
  auto served_before = [priority](const Slot& a, const Slot& b) {
    if (priority == ChipParams::IssuePriority::Ready && a.ready != b.ready) return a.ready < b.ready;
    return a.age < b.age;
  };
  Slot* next = nullptr;
  for (Slot& s : state_[core].slots) {
    if (!s.busy) continue;
    const uint64_t at = fifo ? s.ctx.next_issue[s.next.group] : tile.start_time(s.next, s.ready, &s.ctx);
    if (!next || at < start || (at == start && !fifo && served_before(s, *next))) {
      next = &s;
      start = at;
    }
  }
  return next;
}

void Chip::step(int core, Slot& slot) {
  TileCore& tile = *state_[core].tile;
  const TileCore::Step done = tile.execute(slot.next, slot.ctx, params_.blocking_issue, values_, slot.ready);
  ++instructions_;
  // A younger block lost a unit to this one for a while: its next instruction may be ready later.
  if (done.delayed_others)
    for (Slot& s : state_[core].slots)
      if (s.busy && &s != &slot) s.ready = tile.ready_time(s.next, s.ctx);
  if (observer_)
    observer_->after_step({slot.launch, slot.work.index, core, slot.started, 0}, slot.next.op, done.start,
                          done.done);
  const BlockSegment& seg = slot.work.segments[slot.segment];
  if (++slot.position < seg.end) return prepare(core, slot);
  if (++slot.segment < slot.work.segments.size()) {
    slot.position = slot.work.segments[slot.segment].begin;
    return prepare(core, slot);
  }
  if (slot.ctx.locks_held > 0)
    throw InputError(
        program_->file, {},
        fmt::format("thread block ({}, {}, {}) ended holding {} LOCK(s): a block waiting for them "
                    "would wait forever (UNLOCK each lock it takes)",
                    slot.work.index[0], slot.work.index[1], slot.work.index[2], slot.ctx.locks_held));
  slot.busy = false;
  slot.free_at = slot.ctx.end;
  tile.forget(slot.ctx);
  if (record_blocks_)
    block_records_.push_back({slot.launch, slot.work.index, core, slot.started, slot.ctx.end});
  if (observer_) observer_->block_done({slot.launch, slot.work.index, core, slot.started, slot.ctx.end});
  slot.work.segments.clear();
  --resident_;
  ChipCore& c = *cores_[core];
  c.busy_until = std::max(c.busy_until, slot.ctx.end);
  kernel_reports_.back().end_cycle = std::max(kernel_reports_.back().end_cycle, slot.ctx.end);
}

// A quantum in which no core ran an instruction: if every resident block waits at LOCK, none will ever
// release a lock, and the program is in error (a LOCK with no UNLOCK, or two blocks each holding what the
// other waits for).
void Chip::check_lock_deadlock() {
  size_t waiting = 0, resident = 0;
  for (CoreState& s : state_)
    for (Slot& slot : s.slots) {
      if (!slot.busy) continue;
      ++resident;
      if (slot.next.op == isa::Opcode::Lock && s.tile->start_time(slot.next, slot.ready) == LockTable::kHeld)
        ++waiting;
    }
  if (resident > 0 && waiting == resident)
    throw InputError(program_->file, {},
                     fmt::format("deadlock: all {} resident thread blocks wait at LOCK for locks that only "
                                 "they hold",
                                 resident));
}

// Whether the running kernel has blocks not yet handed out.
bool Chip::blocks_left() {
  return fetch_lookahead() && lookahead_.kernel == kernel_;
}

// The next block in launch order, into `lookahead_`; false when the program has no more.
bool Chip::fetch_lookahead() {
  if (!have_lookahead_ && !source_done_) {
    if (source_->next(lookahead_))
      have_lookahead_ = true;
    else
      source_done_ = true;
  }
  return have_lookahead_;
}

// Runs core `core` until every resident block's next instruction would issue at or after `limit`, or until
// it reaches a free slot while blocks are left: then it stops and waits (`waiting`), and the conductor
// hands out blocks to waiting slots in the order they became free across all cores (fill_waiting_slots).
// Taking the next block as soon as a slot frees would give it to whichever core the conductor happens to
// run first in the quantum.
void Chip::run_quantum(int core, uint64_t limit) {
  auto& slots = state_[core].slots;
  state_[core].waiting = nullptr;
  for (;;) {
    Slot* free = nullptr;
    for (Slot& s : slots)
      if (!s.busy && std::max(s.free_at, kernel_start_) < limit && (!free || s.free_at < free->free_at))
        free = &s;
    uint64_t start = 0;
    Slot* next = next_to_issue(core, start);
    if (free && (!next || std::max(free->free_at, kernel_start_) <= start) && blocks_left()) {
      state_[core].waiting = free;
      return;
    }
    if (!next || start >= limit) return;
    step(core, *next);
  }
}

// SystemC time of `cycle` cycles after `start`, in integers: a double product would round above 2^53 ps
// and wrap past SystemC's last time (2^64 - 1 ps), which is an input error here, not a wrapped time.
void Chip::set_clock_ghz(double ghz) {
  params_.clock_ghz = ghz;
  period_ = sc_core::sc_time(1.0 / ghz, sc_core::SC_NS);
}

sc_core::sc_time Chip::time_of_cycle(sc_core::sc_time start, uint64_t cycle) const {
  const auto offset = try_mul<uint64_t>(cycle, period_.value());
  const auto target = offset ? try_add<uint64_t>(start.value(), *offset) : std::nullopt;
  if (!target || *target > sc_core::sc_max_time().value())
    throw InputError(program_->file, {},
                     fmt::format("the chip reaches cycle {}, past SystemC's time horizon of {} cycles ({} at "
                                 "a clock period of {}); lower the latencies or raise clock_ghz",
                                 cycle, (sc_core::sc_max_time().value() - start.value()) / period_.value(),
                                 sc_core::sc_max_time().to_string(), period_.to_string()));
  return sc_core::sc_time::from_value(*target);
}

void Chip::release(int core) {
  state_[core].go.notify();
  sc_core::wait(quantum_done_);
}

// The core released first books shared bandwidth first, so a fixed order would make core 0 the fastest
// every quantum until the cores drift apart. Rotating the start is fair only when each partition's cores
// are spread evenly through the core order: a core that follows a long run of the other partition's cores
// is the first of its own partition most quanta, and runs ahead of the rest. A fresh permutation every
// quantum (Fisher-Yates over splitmix64, the same on every platform) puts every core first equally often.
void Chip::release_all(uint64_t epoch) {
  const size_t n = state_.size();
  release_order_.resize(n);
  for (size_t i = 0; i < n; ++i) release_order_[i] = static_cast<int>((i + epoch) % n);
  if (params_.release_order == ChipParams::ReleaseOrder::Shuffle) {
    uint64_t state = epoch;
    for (size_t i = n; i > 1; --i) {
      std::swap(release_order_[i - 1], release_order_[splitmix64_next(state) % i]);
    }
  }
  for (size_t i = 0; i < n && !error_; ++i) release(release_order_[i]);
}

// Hands blocks to the waiting slots, earliest free first (ties: lower core), each core running on until
// its next free slot or the quantum's end, until no core waits.
void Chip::fill_waiting_slots() {
  for (;;) {
    int chosen = -1;
    for (size_t c = 0; c < state_.size(); ++c) {
      const Slot* w = state_[c].waiting;
      if (w && (chosen < 0 || w->free_at < state_[chosen].waiting->free_at)) chosen = static_cast<int>(c);
    }
    if (chosen < 0 || error_) return;
    Slot& slot = *state_[chosen].waiting;
    assign_block(chosen, slot, std::max(slot.free_at, kernel_start_));  // none left: the core just goes on
    release(chosen);
  }
}

void Chip::core_thread(int core) {
  for (;;) {
    sc_core::wait(state_[core].go);
    if (!error_) {
      try {
        run_quantum(core, limit_);
      } catch (...) {
        error_ = std::current_exception();
      }
    }
    quantum_done_.notify();
  }
}

// Each quantum: release the cores one after another (core order), then settle kernel boundaries. Requests of
// the next quantum cannot be older than its start, so the calendars forget what lies before it.
void Chip::conductor() {
  for (;;) {
    if (!start_pending_) sc_core::wait(start_event_);
    start_pending_ = false;
    const uint64_t quantum = static_cast<uint64_t>(params_.quantum_cycles);
    const sc_core::sc_time run_start = sc_core::sc_time_stamp();
    uint64_t epoch = 0, end = 0;
    try {
      start_kernel(0);
      while (kernel_ >= 0 && !error_) {
        limit_ = (epoch + 1) * quantum;
        const uint64_t executed = instructions_;
        release_all(epoch);
        fill_waiting_slots();
        ++quanta_;
        if (error_) break;
        if (instructions_ == executed) check_lock_deadlock();
        ++epoch;
        if (kernel_finished()) {
          // The kernel's fixed cost (Nsight Compute's duration of an empty kernel) counts after its last
          // block: where it lies does not change the kernel's duration, and before the first block it would
          // shift every block against the quantum grid.
          kernel_reports_.back().end_cycle += static_cast<uint64_t>(params_.kernel_launch_cycles);
          kernel_reports_.back().warp_instructions =
              warp_instructions_issued() - warp_instructions_before_kernel_;
          end = std::max(end, kernel_reports_.back().end_cycle);
          if (l2_ && params_.flush_l2_between_kernels) l2_->flush();
          kernel_ = -1;
          start_kernel(end);
          if (kernel_ < 0) break;
          epoch = std::max(epoch, kernel_start_ / quantum);
        }
        const uint64_t settled = epoch * quantum;
        if (noc_) noc_->forget_before(settled);
        if (l2_) l2_->forget_before(settled);
        locks_.set_floor(settled);
        hbm_.forget_before(settled);
        const sc_core::sc_time target = time_of_cycle(run_start, settled);
        if (target > sc_core::sc_time_stamp()) sc_core::wait(target - sc_core::sc_time_stamp());
      }
    } catch (...) {
      error_ = std::current_exception();
    }
    // At the end, the dirty lines still in L2 are counted as the last kernel's (not written to DRAM).
    if (l2_) l2_->record_kernel_end();
    cycles_ = end;
    for (auto& core : cores_) {
      core->sram().set_elapsed(cycles_);
      core->dma().set_elapsed(cycles_);
      if (core->mxu()) core->mxu()->set_elapsed(cycles_);
      if (core->vpu()) core->vpu()->set_elapsed(cycles_);
      if (core->tile_regs()) core->tile_regs()->set_elapsed(cycles_);
      if (core->issue()) core->issue()->set_elapsed(cycles_);
    }
  }
}

nlohmann::json Chip::stats_json() const {
  nlohmann::json out = nlohmann::json::object();
  out[stats_.name()] = stats_.to_json();
  out[hbm_.stats().name()] = hbm_.stats().to_json();
  if (l2_) out[l2_->stats().name()] = l2_->stats().to_json();
  if (noc_) out[noc_->stats().name()] = noc_->stats().to_json();
  nlohmann::json cores = nlohmann::json::object();
  for (const auto& core : cores_) {
    nlohmann::json c = core->stats().to_json();
    for (const Component* unit : std::initializer_list<const Component*>{
             &const_cast<ChipCore&>(*core).sram(), &const_cast<ChipCore&>(*core).dma(),
             const_cast<ChipCore&>(*core).mxu(), const_cast<ChipCore&>(*core).vpu(),
             const_cast<ChipCore&>(*core).tile_regs(), const_cast<ChipCore&>(*core).issue()})
      if (unit) c[unit->basename()] = unit->stats().to_json();
    cores["core[" + std::to_string(core->id()) + "]"] = c;
  }
  out["cores"] = cores;
  return out;
}

// The cores' levels, summed over cores: SRAM (by tensor for the DMA's share), registers, MXU, VPU.
std::vector<EnergyLevel> Chip::core_energy_levels() const {
  const EnergyParams& e = *energy_;
  const auto& names = hbm_.tensor_names;
  EnergyLevel sram{"sram", "bytes", e.sram_pj_per_byte, 0, {}};
  EnergyLevel regs{"regfile", "bytes", e.regfile_pj_per_byte, 0, {}};
  EnergyLevel mxu{"mxu", "MACs", e.mac_pj, 0, {}};
  EnergyLevel vpu{"vpu", "element ops", e.vector_op_pj, 0, {}};
  for (const auto& core : cores_) {
    ChipCore& c = const_cast<ChipCore&>(*core);
    sram.count += c.sram().bytes_read + c.sram().bytes_written;
    const auto& dma = c.dma().sram_bytes_per_tensor;
    for (size_t t = 0; t < names.size(); ++t) sram.count_per_tensor[names[t]] += t < dma.size() ? dma[t] : 0;
    if (c.tile_regs()) regs.count += c.tile_regs()->bytes_read + c.tile_regs()->bytes_written;
    if (c.mxu()) mxu.count += c.mxu()->macs;
    if (c.vpu()) vpu.count += c.vpu()->element_ops;
  }
  std::vector<EnergyLevel> out = {sram};
  if (cores_.front()->tile_regs()) out.push_back(regs);
  if (cores_.front()->mxu()) out.push_back(mxu);
  if (cores_.front()->vpu()) out.push_back(vpu);
  return out;
}

// DRAM: what it served (sector-rounded); L2: the cores' sector accesses plus fills and writebacks; the
// network: what the cores loaded and stored. Every level by tensor.
std::optional<EnergyReport> Chip::energy_report() const {
  if (!energy_) return std::nullopt;
  const EnergyParams& e = *energy_;
  const auto& names = hbm_.tensor_names;
  EnergyLevel dram{"dram", "bytes", 8 * e.dram_pj_per_bit, 0, {}};
  EnergyLevel l2{"l2", "bytes", e.l2_pj_per_byte, 0, {}};
  EnergyLevel link{"sm_l2", "bytes", 8 * e.noc_pj_per_bit, 0, {}};
  for (size_t t = 0; t < names.size(); ++t) {
    const uint64_t d = hbm_.transferred_read_per_tensor[t] + hbm_.transferred_written_per_tensor[t];
    dram.count_per_tensor[names[t]] = d;
    if (l2_)
      l2.count_per_tensor[names[t]] =
          (l2_->read_sectors[t] + l2_->write_sectors[t]) * static_cast<uint64_t>(l2_->params().sector_bytes) +
          d;
    if (noc_)
      link.count_per_tensor[names[t]] = noc_->bytes_read_per_tensor[t] + noc_->bytes_written_per_tensor[t];
  }
  EnergyReport report{"whole chip", {}};
  for (EnergyLevel* level : {&dram, &l2, &link}) {
    if ((level == &l2 && !l2_) || (level == &link && !noc_)) continue;
    for (const auto& [tensor, count] : level->count_per_tensor) level->count += count;
    report.levels.push_back(*level);
  }
  for (auto& level : core_energy_levels()) report.levels.push_back(std::move(level));
  return report;
}

void register_chip_params(ParamReader& p, ChipParams& r) {
  ChipParams d;
  r.cores = p.get<int64_t>("cores", d.cores, "cores",
                           "cores (SMs, TensorCores), each its own SystemC process", 1, 1 << 16);
  r.max_blocks_per_core = p.get<int64_t>("max_blocks_per_core", d.max_blocks_per_core, "blocks",
                                         "most thread blocks resident on one core", 1, 1 << 16);
  r.blocks_per_core =
      p.get<int64_t>("blocks_per_core", d.blocks_per_core, "blocks",
                     "0: as many as the core's SRAM holds; > 0: this many (a kernel's measured "
                     "occupancy when registers, not SRAM, limit it)",
                     0, 1 << 16);
  r.core_sram_bytes =
      static_cast<uint64_t>(p.get<int64_t>("core_sram_bytes", static_cast<int64_t>(d.core_sram_bytes),
                                           "bytes", "SRAM of one core, shared by its resident blocks", 1));
  r.quantum_cycles =
      p.get<int64_t>("quantum_cycles", d.quantum_cycles, "cycles",
                     "how far a core may run ahead of the others (temporal decoupling)", 1, 1ll << 40);
  r.kernel_launch_cycles =
      p.get<int64_t>("kernel_launch_cycles", d.kernel_launch_cycles, "cycles",
                     "a kernel's fixed cost, counted after its last block: the next kernel starts that much "
                     "later",
                     0, 1ll << 40);
  const std::string priority = p.choice(
      "issue_priority", "oldest", {"oldest", "ready", "fifo"},
      "which resident block's instruction a core runs next: the one its unit can take first, and of several "
      "the block placed earliest (oldest: a GPU's warp schedulers favour older warps) or the one whose "
      "instruction was ready first (ready: first come first served at each unit); fifo: the one issued "
      "first, which holds its unit while it waits for operands");
  r.issue_priority = priority == "oldest"  ? ChipParams::IssuePriority::Oldest
                     : priority == "ready" ? ChipParams::IssuePriority::Ready
                                           : ChipParams::IssuePriority::Fifo;
  r.older_preempts = p.get<bool>(
      "older_preempts", d.older_preempts, "",
      "an older block's instruction that becomes ready while a younger block's holds the MXU or VPU takes "
      "the unit at once, the younger's finishing later by as long (a GPU's warp schedulers issue older "
      "warps first; docs/chip.md, \"Which resident block a core serves first\"); false: a unit's instruction "
      "keeps it to its end");
  r.share_units = p.get<bool>(
      "share_units", d.share_units, "",
      "resident blocks' instructions that overlap share the MXU, the VPU and the warp schedulers, each "
      "block's own in program order (processor sharing: a GPU's schedulers interleave every resident "
      "block's warp instructions; docs/chip.md, \"Sharing a unit between blocks\"); false: a unit's "
      "instruction "
      "keeps it to its end, the next one waits");
  r.share_older_weight = p.get<double>(
      "share_older_weight", d.share_older_weight, "",
      "with share_units: how many times the next younger block's share of a unit a block gets (1: equal "
      "shares; large: the older takes the unit, as older_preempts)",
      1.0, 1e6);
  if (r.share_units && r.older_preempts)
    p.fail("share_units", "share_units and older_preempts are two ways of serving a unit: choose one");
  r.release_order =
      p.choice("release_order", "shuffle", {"shuffle", "rotate"},
               "the order the cores run in each quantum (the first books shared bandwidth first): a fresh "
               "pseudo-random permutation every quantum (shuffle), or core order starting one core later "
               "every quantum (rotate: fair only when each L2 partition's cores are spread evenly)") ==
              "shuffle"
          ? ChipParams::ReleaseOrder::Shuffle
          : ChipParams::ReleaseOrder::Rotate;
  r.flush_l2_between_kernels =
      p.choice(
          "l2_between_kernels", "flush", {"flush", "keep"},
          "flush: write back and invalidate L2 before each kernel (Nsight Compute's --cache-control all, "
          "what the validation data measures); keep: later kernels find what earlier ones left") == "flush";
}

}  // namespace attnsim
