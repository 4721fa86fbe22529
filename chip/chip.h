// A whole chip: N cores (each its own SystemC process with its own SRAM, DMA, MXU, VPU and tile registers),
// the on-chip network, a shared L2 and DRAM behind it. A program is a sequence of kernels; each kernel's
// thread blocks are placed on cores by a block scheduler in launch order as slots free up, with as many
// blocks resident per core as its SRAM (and the block limit) allows.
//
// Time: every core keeps its own local time (temporal decoupling) and runs at most one quantum ahead; a
// conductor process releases the cores one after another each quantum, in an order of its own (chip.
// release_order), so the result does not depend on the order in which SystemC would wake them. Shared
// resources (network ports, L2 partitions, DRAM) are bandwidth calendars that tolerate requests arriving out
// of time order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chip/block_source.h"
#include "models/common/component.h"
#include "models/common/energy.h"
#include "models/common/params.h"
#include "models/core/tile_core.h"
#include "models/hbm/hbm.h"
#include "models/l2/l2.h"
#include "models/noc/noc.h"

namespace attnsim {

struct ChipParams {
  int64_t cores = 132;
  int64_t max_blocks_per_core = 32;  // the hardware's resident-block limit
  int64_t blocks_per_core = 0;  // 0: from the SRAM footprint; > 0: forced (a kernel's measured occupancy)
  uint64_t core_sram_bytes = 233472;  // SRAM of one core, shared by its resident blocks
  int64_t quantum_cycles = 1000;
  int64_t kernel_launch_cycles = 0;  // a kernel's fixed cost, after its last block (before the next kernel)
  bool flush_l2_between_kernels = true;
  bool blocking_issue = false;
  // Which resident block a core's unit serves first when several wait for it (docs/chip.md, "Which
  // resident block a core serves first"): the oldest (earliest placed), as a GPU's warp schedulers favour
  // older warps; the one whose instruction became ready first (first come first served at each unit); or,
  // with fifo, the one issued first, which books its unit while it waits for operands.
  enum class IssuePriority { Oldest, Ready, Fifo };
  IssuePriority issue_priority = IssuePriority::Oldest;
  // An older block's instruction takes the MXU or VPU from a younger block's in the middle
  // (TileCore::set_older_preempts).
  bool older_preempts = false;
  // Resident blocks' overlapping instructions share the MXU, VPU and warp schedulers
  // (TileCore::set_unit_sharing).
  bool share_units = false;
  double share_older_weight = 1;  // with share_units: an older block's share over the next younger one's
  // The order the conductor releases the cores in each quantum (docs/chip.md, "The order cores run in a
  // quantum"): the first released books shared bandwidth first. Rotate: core order, starting one core later
  // every quantum; shuffle: a fresh pseudo-random permutation every quantum (fixed seed), so every core is
  // equally often ahead of the cores of its L2 partition however the partitions interleave.
  enum class ReleaseOrder { Rotate, Shuffle };
  ReleaseOrder release_order = ReleaseOrder::Shuffle;
  double clock_ghz = 1.0;
};

// The units of one core, named core_<i>.<unit> in the SystemC hierarchy.
class ChipCore : public Component {
 public:
  ChipCore(sc_core::sc_module_name instance, int id, const Sram& sram, const DmaEngine& dma,
           const MxuUnit* mxu, const VpuUnit* vpu, const TileRegisterFile* tile_regs, const IssueUnit* issue);
  Sram& sram() { return *sram_; }
  DmaEngine& dma() { return *dma_; }
  MxuUnit* mxu() { return mxu_.get(); }
  VpuUnit* vpu() { return vpu_.get(); }
  TileRegisterFile* tile_regs() { return tile_regs_.get(); }
  IssueUnit* issue() { return issue_.get(); }
  const IssueUnit* issue() const { return issue_.get(); }
  int id() const { return id_; }

  uint64_t blocks_run = 0;
  uint64_t busy_until = 0;  // end of the last block it ran

 private:
  int id_;
  std::unique_ptr<Sram> sram_;
  std::unique_ptr<DmaEngine> dma_;
  std::unique_ptr<MxuUnit> mxu_;
  std::unique_ptr<VpuUnit> vpu_;
  std::unique_ptr<TileRegisterFile> tile_regs_;
  std::unique_ptr<IssueUnit> issue_;
};

struct KernelReport {
  std::string name;
  std::array<int64_t, 3> grid{};
  int64_t blocks = 0;
  int64_t blocks_per_core = 0;  // occupancy used
  double waves = 0;             // blocks / (cores x blocks_per_core)
  uint64_t start_cycle = 0, end_cycle = 0;
  uint64_t warp_instructions =
      0;  // all cores' warp schedulers, this kernel's blocks (0 without an issue unit)
};

// When and where one thread block ran (Chip::record_blocks).
struct BlockRecord {
  int32_t launch = 0;              // index into Chip::kernels()
  std::array<int64_t, 3> index{};  // blockIdx x, y, z
  int32_t core = 0;
  uint64_t start_cycle = 0, end_cycle = 0;
};

nlohmann::json kernel_reports_json(const std::vector<KernelReport>& kernels);

// Told of every instruction a core executes and of every block's end, as they happen (attnsim run and
// validate --timeline). `block` carries the block's launch, index, core and start; its end_cycle is set in
// block_done only.
class ChipObserver {
 public:
  virtual ~ChipObserver() = default;
  virtual void after_step(const BlockRecord& block, isa::Opcode op, uint64_t start, uint64_t done) = 0;
  virtual void block_done(const BlockRecord& block) = 0;
};

class Chip : public Component {
 public:
  SC_HAS_PROCESS(Chip);
  // The prototype units give every core's parameters; hbm is DRAM; l2 and noc may be null (then the cores
  // reach DRAM directly, e.g. a TPU-like chip).
  Chip(sc_core::sc_module_name instance, const ChipParams& params, const Sram& sram, const DmaEngine& dma,
       const MxuUnit* mxu, const VpuUnit* vpu, const TileRegisterFile* tile_regs, const IssueUnit* issue,
       Hbm& hbm, L2Cache* l2, Noc* noc);

  void load(const isa::Program& program, Dtype dtype, bool timing_only);
  void load(isa::Program&&, Dtype, bool) = delete;  // the chip keeps a reference
  void run();                                       // sc_start() until the program completes; rethrows errors
  std::vector<double> tensor_values(int tensor) const { return tensors_[tensor].values; }

  const ChipParams& params() const { return params_; }
  // For quantum studies in one process (SystemC elaborates once): takes effect at the next run().
  // Blocks per core of each kernel, in launch order (a launch's measured occupancy); 0 or missing entries
  // fall back to chip.blocks_per_core or the SRAM footprint. Kept until changed.
  void set_kernel_occupancy(std::vector<int64_t> per_kernel) { kernel_occupancy_ = std::move(per_kernel); }
  void set_quantum(int64_t cycles) { params_.quantum_cycles = cycles; }
  void set_issue_priority(ChipParams::IssuePriority priority) { params_.issue_priority = priority; }
  void set_older_preempts(bool on) { params_.older_preempts = on; }  // from the next load on
  void set_share_units(bool on) { params_.share_units = on; }        // from the next load on
  // The cores' clock (what a cycle lasts), for the next run(); Machine::set_clock_ghz keeps DRAM in step.
  void set_clock_ghz(double ghz);
  // Keep a BlockRecord for every block of the next runs (off by default: 40 bytes a block).
  void record_blocks(bool on) { record_blocks_ = on; }
  const std::vector<BlockRecord>& block_records() const { return block_records_; }
  // Tell `observer` (null: nobody) of every instruction and block end of the next runs; not owned (see
  // ObservedBy, which takes it away again however the run ends).
  void set_observer(ChipObserver* observer) { observer_ = observer; }
  std::vector<std::unique_ptr<ChipCore>>& cores() { return cores_; }
  const std::vector<KernelReport>& kernels() const { return kernel_reports_; }
  Hbm& dram() { return hbm_; }
  L2Cache* l2() { return l2_; }
  Noc* noc() { return noc_; }
  uint64_t cycles() const { return cycles_; }
  uint64_t instructions() const { return instructions_; }
  std::array<uint64_t, isa::kOpcodeCount> per_opcode() const;  // all cores
  uint64_t block_footprint_bytes() const { return footprint_; }
  nlohmann::json stats_json() const;
  // Per-access energies (the config's `energy:` section); none: no energy is reported.
  void set_energy(std::optional<EnergyParams> params) { energy_ = params; }
  // The last run's energy, whole chip, from the models' counts; none without energy parameters.
  std::optional<EnergyReport> energy_report() const;

  uint64_t cycles_ = 0;
  uint64_t instructions_ = 0;
  uint64_t blocks_ = 0;
  uint64_t quanta_ = 0;

 private:
  struct Slot {
    bool busy = false;
    BlockWork work;
    size_t segment = 0, position = 0;
    BlockContext ctx;
    uint64_t free_at = 0;
    uint64_t age = 0;    // placement order over the run: smaller is older
    TileDecoded next;    // the instruction at `position`, decoded
    uint64_t ready = 0;  // when its operands allow it to start
    uint64_t started = 0;
    int32_t launch = 0;  // the kernel launch it belongs to
  };
  struct CoreState {
    std::unique_ptr<TileCore> tile;
    std::vector<Slot> slots;
    sc_core::sc_event go;
    Slot* waiting = nullptr;  // a free slot the core stopped at, waiting for the conductor to fill it
  };

  void conductor();
  void check_lock_deadlock();
  void core_thread(int core);
  void run_quantum(int core, uint64_t limit);
  void release(int core);
  void release_all(uint64_t epoch);
  sc_core::sc_time time_of_cycle(sc_core::sc_time start, uint64_t cycle) const;
  void fill_waiting_slots();
  bool blocks_left();
  bool fetch_lookahead();
  bool assign_block(int core, Slot& slot, uint64_t at);
  void step(int core, Slot& slot);
  void prepare(int core, Slot& slot);
  Slot* next_to_issue(int core, uint64_t& start);
  void start_kernel(uint64_t at);
  bool kernel_finished();
  uint64_t warp_instructions_issued() const;
  int64_t occupancy(int kernel) const;
  int32_t launch_index() const { return static_cast<int32_t>(kernel_reports_.size()) - 1; }

  std::vector<EnergyLevel> core_energy_levels() const;

  ChipParams params_;
  std::optional<EnergyParams> energy_;
  Hbm& hbm_;
  L2Cache* l2_;
  std::vector<int64_t> kernel_occupancy_;
  Noc* noc_;
  MemoryLevel* memory_ = nullptr;  // what the cores' DMA engines reach
  std::vector<std::unique_ptr<ChipCore>> cores_;
  std::vector<CoreState> state_;
  std::vector<int> release_order_;  // reused every quantum
  std::vector<TensorState> tensors_;
  LockTable locks_;  // LOCK's spin locks, shared by the cores

  const isa::Program* program_ = nullptr;
  std::unique_ptr<BlockSource> source_;
  Dtype dtype_ = Dtype::F32;
  bool values_ = false;
  std::vector<uint64_t> sram_offsets_, reg_bases_;
  uint64_t footprint_ = 0;
  BlockWork lookahead_;
  bool have_lookahead_ = false;
  bool source_done_ = false;
  int32_t kernel_ = -1;  // the kernel whose blocks are being handed out
  uint64_t kernel_start_ = 0;
  uint64_t warp_instructions_before_kernel_ = 0;  // all cores' count when the running kernel started
  int64_t resident_ = 0;                          // blocks on cores now
  std::vector<KernelReport> kernel_reports_;
  bool record_blocks_ = false;
  std::vector<BlockRecord> block_records_;
  ChipObserver* observer_ = nullptr;

  sc_core::sc_event start_event_, quantum_done_;
  bool start_pending_ = false;
  std::exception_ptr error_;
  sc_core::sc_time period_;
  uint64_t limit_ = 0;  // end of the quantum the cores are running
};

// `observer` watches `chip` for this object's lifetime, also when a run throws.
class ObservedBy {
 public:
  ObservedBy(Chip& chip, ChipObserver* observer) : chip_(chip) { chip_.set_observer(observer); }
  ~ObservedBy() { chip_.set_observer(nullptr); }
  ObservedBy(const ObservedBy&) = delete;
  ObservedBy& operator=(const ObservedBy&) = delete;

 private:
  Chip& chip_;
};

void register_chip_params(ParamReader& reader, ChipParams& params);

}  // namespace attnsim
