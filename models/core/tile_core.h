// One tile core: issue, scoreboard and dispatch of tile instructions (LOAD, STORE and STORE_ADD through the
// DMA engine to the memory level behind it, MAC on the MXU, element-wise ops and reductions on the VPU). A
// single-core machine has one (the sequencer's tile path); a chip has one per core. Times are computed, not
// ticked: each instruction's start and completion come from the unit models.
#pragma once

#include <array>
#include <deque>
#include <optional>
#include <vector>

#include "isa/program.h"
#include "models/common/memory_level.h"
#include "models/core/lock_table.h"
#include "models/core/shared_server.h"
#include "models/dma/dma.h"
#include "models/issue/issue.h"
#include "models/mxu/mxu.h"
#include "models/regfile/tile_regfile.h"
#include "models/sram/sram.h"
#include "models/vpu/vpu.h"

namespace attnsim {

// The units of one core; mxu, vpu and tile_regs may be absent (an instruction that needs one fails).
struct TileUnits {
  Sram* sram = nullptr;
  DmaEngine* dma = nullptr;
  MxuUnit* mxu = nullptr;
  VpuUnit* vpu = nullptr;
  TileRegisterFile* tile_regs = nullptr;
  MemoryLevel* memory = nullptr;  // what LOAD, STORE and STORE_ADD reach: HBM, or the chip's L2
  IssueUnit* issue = nullptr;     // a GPU core's warp schedulers; absent: no issue limit
  LockTable* locks = nullptr;     // LOCK's locks, shared by a chip's cores; absent: the core's own
};

// A tensor in the backing store shared by all cores: its layout in memory and (unless timing-only) values.
struct TensorState {
  Dtype dtype = Dtype::F32;
  uint64_t base = 0;
  bool coherent = false;  // its loads acquire (`.tensor ... coherent`)
  std::vector<double> values;
};

// A buffer of one thread block: where it lives, its scoreboard times and (unless timing-only) values.
struct BufferState {
  Dtype dtype = Dtype::F32;
  uint64_t base = 0;        // SRAM offset or first tile register
  uint64_t ready = 0;       // last write done
  uint64_t reads_done = 0;  // last read done
  // With vpu.chaining, nonzero when the last write was an element-wise vector op: its first vector reaches
  // a dependent vector op then, which may start at once instead of at `ready`.
  uint64_t chain_ready = 0;
  bool in_regs = false;  // in the tile register file instead of SRAM
  // An SRAM tile an element-wise op last wrote from registers (P, dS on their way to a product): the
  // threads that stored it still hold it in the mma layout, so an element-wise op reading it loads nothing.
  bool register_copy = false;
  std::vector<double> values;
};

struct TileOperand {
  int32_t storage = -1;  // buffer or tensor index; -1 for an immediate
  bool is_buffer = false;
  int64_t offset = 0;          // element offset of (row0, col0) in its storage
  int64_t rows = 0, cols = 0;  // stored shape (before transpose)
  int64_t row_stride = 0;
  bool transpose = false;
  int64_t out_rows() const { return transpose ? cols : rows; }
  int64_t out_cols() const { return transpose ? rows : cols; }
};

struct TileDecoded {
  isa::Opcode op{};
  uint8_t count = 0;
  uint8_t group = 0;  // its instruction group: which in-order stream of the block it issues from
  std::array<TileOperand, 4> ops;
  std::array<int64_t, 2> imm{};
  const isa::Program* program = nullptr;  // for errors found when it runs (LOCK, UNLOCK)
  SourceLoc loc{};
  // The operand written: the memory slice of STORE and STORE_ADD, MASK's tile, the lock of LOCK and UNLOCK
  // (FENCE has none), else the last operand.
  size_t destination() const {
    if (op == isa::Opcode::Store || op == isa::Opcode::StoreAdd) return 1;
    if (op == isa::Opcode::Mask || op == isa::Opcode::Lock || op == isa::Opcode::Unlock ||
        op == isa::Opcode::Fence)
      return 0;
    return static_cast<size_t>(count - 1);
  }
};

// What one thread block (or a whole single-core program) keeps while it runs on a core.
struct BlockContext {
  std::vector<BufferState> buffers;
  uint64_t age = 0;  // placement order on a chip (smaller is older): who may take a unit from whom
  std::vector<uint64_t> tensor_written;  // memory read-after-write, per tensor
  // Per instruction group (isa::Instruction::group): each issues in order, independently of the others.
  std::array<uint64_t, isa::kInstructionGroups> next_issue{};
  uint64_t end = 0;
  uint64_t stalls = 0;
  int32_t locks_held = 0;
  bool rolled_k_loops = false;       // the block's kernel steps through products' k in rolled loops
  int64_t warps = 0, warp_rows = 0;  // how its warps share a product's output (isa::KernelDecl::warps)
  std::array<int64_t, 3> mma{};      // its mma instruction shape (isa::KernelDecl::mma; 0: the machine's)
  bool iterative_softmax = false;    // isa::KernelDecl::iterative_softmax
  bool accurate_exp = false;         // isa::KernelDecl::accurate_exp
  isa::CodeOverhead overhead{};      // isa::KernelDecl::overhead: what its code spends beside tile ops
  WarpTiling tiling() const { return {warps, warp_rows, mma, overhead}; }
  void take_code(const isa::KernelDecl& kernel) {
    rolled_k_loops = kernel.rolled_k_loops;
    warps = kernel.warps;
    warp_rows = kernel.warp_rows;
    mma = kernel.mma;
    iterative_softmax = kernel.iterative_softmax;
    accurate_exp = kernel.accurate_exp;
    overhead = kernel.overhead;
  }
};

class TileCore {
 public:
  TileCore(const TileUnits& units, std::vector<TensorState>& tensors, int core_id);

  // Checks that the program's instruction can run here and resolves its operands. Throws InputError.
  void decode(const isa::Program& program, const isa::Instruction& inst,
              const std::vector<isa::TileRef>& tiles, TileDecoded& d) const;
  // A fresh context for a block of `program`, its buffers placed at `sram_base` onwards (SRAM buffers)
  // and the tile register file; values allocated unless timing-only.
  BlockContext context(const isa::Program& program, Dtype dtype, bool values, uint64_t sram_base = 0,
                       const std::vector<uint64_t>* sram_offsets = nullptr,
                       const std::vector<uint64_t>* reg_bases = nullptr) const;

  struct Step {
    uint64_t start = 0, done = 0;
    uint64_t unit_free = 0;  // when its unit may take the next instruction: done, less a result latency
    uint64_t hold = 0;       // the group's next instruction issues no earlier (a store its warps issue)
    // It took a unit or the schedulers from a younger block's instruction, which now ends later: so may
    // that block's next instruction be ready later (set_older_preempts).
    bool delayed_others = false;
    uint64_t chain_ready = 0;  // vpu.chaining: when a dependent vector op may start (0: not chainable)
  };
  // Runs one decoded instruction of `ctx`: scoreboard, unit timing, values. In order: the context's next
  // issue slot moves to the cycle after this one started (blocking: after it completed).
  Step execute(const TileDecoded& d, BlockContext& ctx, bool blocking, bool values);
  // The same, with `ready` (from ready_time) already known.
  Step execute(const TileDecoded& d, BlockContext& ctx, bool blocking, bool values, uint64_t ready);
  // Scoreboard: the cycle the instruction's operands allow it to start. Depends on `ctx` alone, so it stays
  // valid until this block executes another instruction.
  uint64_t ready_time(const TileDecoded& d, const BlockContext& ctx) const;
  // The cycle its unit (MXU, VPU, a DMA queue slot) would accept it, given `ready`: what decides which of
  // a core's resident blocks issues next. `ctx`: the block it belongs to, for set_older_preempts.
  uint64_t start_time(const TileDecoded& d, uint64_t ready, const BlockContext* ctx = nullptr) const;

  // Preemptive-resume age order at the MXU and VPU (off by default): an older block's instruction (smaller
  // BlockContext::age) that becomes ready while a younger block's holds the unit takes the unit at once, and
  // the younger one's remaining work, its result and its buffers' times, move later by as long as the older
  // one kept the unit. A GPU's warp schedulers issue the older block's ready warps first; a tile instruction
  // is thousands of warp instructions, so without this the younger's holds the unit to its end.
  void set_older_preempts(bool on) { older_preempts_ = on; }
  // Processor sharing (off by default; not with set_older_preempts): different blocks' instructions that
  // overlap share the MXU, the VPU and the warp schedulers, each block's own in program order
  // (SharedServer). An instruction starts once its operands and its own block's earlier work on the unit
  // allow, and the unit's other blocks' instructions, results and buffers' times move later by what it
  // takes from them. Alone, a block runs as without it, cycle for cycle.
  void set_unit_sharing(bool on, double older_weight = 1) {
    sharing_ = on;
    for (SharedServer* server : {&mxu_shared_, &vpu_shared_, &sfu_shared_, &port_shared_})
      server->set_older_weight(older_weight);
  }
  // `ctx`'s block has ended (its context is about to be reused): none of its instructions can move now.
  void forget(const BlockContext& ctx);

  void reset_units();  // clears the per-run counters of this core's units and its busy times
  const TileUnits& units() const { return units_; }
  int id() const { return id_; }
  const std::array<uint64_t, isa::kOpcodeCount>& per_opcode() const { return per_opcode_; }
  uint64_t instructions() const;

 private:
  void require_unit(const isa::Program& program, const void* unit, const char* name) const;
  TileView view(const TileOperand& operand, BlockContext& ctx);
  // `repeated` (an operand index, or -1) is read `repeats` times: the MXU's shared operand sent to each
  // array.
  uint64_t operand_traffic(const TileDecoded& d, const BlockContext& ctx, int repeated = -1,
                           uint64_t repeats = 1) const;
  // 0 without an issue unit; a product's ldmatrix among them into `ldmatrix` when given.
  double issue_cost(const TileDecoded& d, const BlockContext& ctx, double* ldmatrix = nullptr) const;
  double shared_access_cost(const TileDecoded& d, const BlockContext& ctx) const;
  // An element-wise op that stores registers to SRAM (BufferState::register_copy), and a product's A operand
  // its warps hold from such a store.
  static bool writes_from_registers(const TileDecoded& d, const BlockContext& ctx);
  static bool a_from_threads(const TileOperand& a, const BlockContext& ctx);
  IssueUnit::Span issued(const TileDecoded& d, BlockContext& ctx, uint64_t start, double count,
                         uint64_t unit_cycles);
  // The schedulers' span for `count` warp instructions of `ctx` from `at`: taken from a younger block's
  // instructions if set_older_preempts, else after what they booked. hold_port then records the instruction
  // as the schedulers' holder once its result time is known.
  IssueUnit::Span book_issue(BlockContext& ctx, isa::Opcode op, uint64_t at, double count,
                             int64_t warps = 1 << 20, uint64_t held = 0);
  void hold_port(BlockContext& ctx, const TileDecoded& d, uint64_t done, uint64_t latency);
  // A product's tensor cores lose cycles to the other instructions the schedulers issue meanwhile: what is
  // queued when it starts and its own fragment loads (mma_delay_at_start, given its warp instructions
  // `count`), what issues while the MXU is busy (yield_mxu, which moves its free time on).
  uint64_t mma_delay_at_start(const TileDecoded& d, const BlockContext& ctx, uint64_t start, uint64_t cycles,
                              double count) const;
  void yield_mxu(const IssueUnit::Span& span, double instructions);
  Step memory_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready, bool values);
  Step lock_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready);
  Step unlock_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready);
  Step fence_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready);
  MemAccess lock_word(const TileDecoded& d) const;
  LockTable& locks() const { return units_.locks ? *units_.locks : own_locks_; }
  Step matrix_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready, bool values);
  Step vector_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready, bool values);

  // The instruction that has a unit until the unit's free time (set_older_preempts).
  struct Holder {
    BlockContext* ctx = nullptr;
    uint64_t from = 0;     // it holds the unit from here to the unit's free time
    uint64_t done = 0;     // its result
    uint64_t latency = 0;  // from its last cycle on the unit to its result
    TileDecoded d;
  };
  // When `ctx`'s instruction could have a unit free at `free`: earlier, from when a younger holder's
  // remaining stretch began, if it may take the unit from it.
  uint64_t unit_free_for(uint64_t free, const Holder& holder, const BlockContext* ctx) const;
  void hold(Holder& holder, BlockContext& ctx, const TileDecoded& d, uint64_t start, uint64_t done,
            uint64_t latency) const;
  // The holder lost `taken` cycles of the unit from `start` to an older block's instruction: its work
  // resumes after, ending at `unit_free`; its result and buffers move with it.
  void resume_later(Holder& holder, uint64_t start, uint64_t taken, uint64_t unit_free);
  // The holder's result is now ready at `done` (if later): its buffers' times and its block's end move.
  void push_results(Holder& holder, uint64_t done);
  // set_unit_sharing: the unit a vector op runs on; what the last add to `server` moved, into the
  // instructions in flight; the instruction just timed, in flight until no unit holds it; forgets those
  // done before `now`, every so often.
  SharedServer& vector_pipe_server(isa::Opcode op);
  const SharedServer& vector_pipe_server(isa::Opcode op) const;
  void apply_moves(const SharedServer& server);
  void track(BlockContext& ctx, const TileDecoded& d, uint64_t done, uint64_t latency);
  void sweep(uint64_t now);
  // The schedulers' cycles booked but not yet spent at `start` (of at most `cycles`).
  uint64_t port_queued(uint64_t start, uint64_t cycles) const;
  void vector_values(const TileDecoded& d, BlockContext& ctx, VpuOp op);

  TileUnits units_;
  std::vector<TensorState>& tensors_;
  int id_;
  // Since when the MXU has been busy without a break: an instruction that issues any time in that stretch
  // (in simulated time; a block's later instructions are timed after its earlier ones) delays its end.
  uint64_t mxu_busy_since_ = 0;
  uint64_t mxu_free_ = 0;
  uint64_t vpu_free_ = 0;
  uint64_t sfu_free_ = 0;  // vpu.sfu_pipe: exp and div's own pipe
  bool older_preempts_ = false;
  Holder mxu_holder_, vpu_holder_, sfu_holder_, port_holder_;
  // The vector pipe `op` runs on (vpu.sfu_pipe) and its holder.
  bool on_sfu(isa::Opcode op) const;
  uint64_t& vector_pipe_free(isa::Opcode op);
  uint64_t vector_pipe_free(isa::Opcode op) const;
  Holder& vector_pipe_holder(isa::Opcode op);
  const Holder& vector_pipe_holder(isa::Opcode op) const;
  // vpu.chaining: the latest result of a chainable source of `d` (its last vector reaches d then).
  uint64_t chained_sources_ready(const TileDecoded& d, const BlockContext& ctx) const;
  std::optional<IssueUnit::Span> port_booked_;  // book_issue's span, for hold_port
  bool sharing_ = false;
  SharedServer mxu_shared_, vpu_shared_, sfu_shared_, port_shared_;
  uint64_t job_ = 0;  // the instruction being executed, for the servers
  // The instructions that may still move, by job from in_flight_first_ on (a job no unit holds: no ctx).
  std::deque<Holder> in_flight_;
  uint64_t in_flight_first_ = 1;
  bool delayed_others_ = false;  // for this instruction's Step
  std::array<uint64_t, isa::kOpcodeCount> per_opcode_{};
  mutable LockTable own_locks_;  // a single core's (a program run alone)
};

}  // namespace attnsim
