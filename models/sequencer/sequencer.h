// The in-order sequencer: decodes a Program against the machine (resolving registers, addresses and
// latencies once), then executes it in an SC_THREAD. Time is kept as a local cycle count and handed to the
// SystemC kernel only once per quantum (TLM-2.0 quantum-keeper style), so the scalar path does not pay a
// context switch per instruction; cycle counts stay exact because the final sync covers the remainder.
#pragma once

#include <array>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "isa/program.h"
#include "models/alu/alu.h"
#include "models/common/component.h"
#include "models/core/tile_core.h"
#include "models/dma/dma.h"
#include "models/dram/dram.h"
#include "models/hbm/hbm.h"
#include "models/mac/mac.h"
#include "models/mxu/mxu.h"
#include "models/regfile/regfile.h"
#include "models/regfile/tile_regfile.h"
#include "models/sram/sram.h"
#include "models/vpu/vpu.h"

namespace attnsim {

// Told after every executed instruction, e.g. to record a register table. Costs one branch when absent.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void after_step(size_t instruction_index, uint64_t issue_cycle, uint64_t done_cycle) = 0;
};

// The units a machine has; any may be absent (null). Scalar traces need dram, regfile, mac and alu; tile
// programs need hbm, sram, dma and whichever of mxu and vpu they use.
struct SequencerUnits {
  Dram* dram = nullptr;
  RegisterFile* regfile = nullptr;
  MacUnit* mac = nullptr;
  Alu* alu = nullptr;
  Hbm* hbm = nullptr;
  Sram* sram = nullptr;
  DmaEngine* dma = nullptr;
  MxuUnit* mxu = nullptr;
  VpuUnit* vpu = nullptr;
  TileRegisterFile* tile_regs = nullptr;  // holds `.buffer ... regs` buffers (accumulators, vector registers)
  IssueUnit* issue = nullptr;             // a GPU core's warp schedulers (tile programs); none: no limit
};

class Sequencer : public Component {
 public:
  enum class Issue : uint8_t {
    Blocking,   // the next instruction issues when the previous one completes (seed 002's machine)
    Pipelined,  // one issue per cycle in order; a scoreboard stalls on register hazards and busy units
  };
  struct Params {
    Issue issue = Issue::Blocking;
    int64_t quantum_cycles = 1'000'000;
    double clock_ghz = 1.0;
  };

  SC_HAS_PROCESS(Sequencer);
  Sequencer(sc_core::sc_module_name instance, const Params& params, const SequencerUnits& units);

  // Decodes against this machine; throws InputError (with the trace location) for registers beyond the
  // register file. Also lays out DRAM and clears the register file.
  // timing_only (tile programs): keep no values, only counts and cycles; memory then does not grow with
  // the tensors' sizes.
  void load(const isa::Program& program, Dtype dtype, bool symbolic, bool timing_only = false);
  void load(isa::Program&&, Dtype, bool, bool = false) = delete;  // the sequencer keeps a reference
  bool tile_mode() const { return tile_mode_; }
  // Contents of a tensor after the run (scalar DRAM or tile HBM values); empty in timing-only runs.
  std::vector<double> tensor_values(int tensor) const;
  void set_observer(StepObserver* observer) { observer_ = observer; }
  // Called at every synchronisation with the kernel (every sequencer.quantum_cycles) with the instructions
  // executed and the current issue cycle, so a long run can say how far it has got.
  using Progress = std::function<void(uint64_t instructions, uint64_t cycle)>;
  void set_progress(Progress progress) { progress_ = std::move(progress); }
  // Starts the loaded program; the caller then runs the kernel (sc_start) until it is idle. A machine can
  // run several programs one after another in one process (load, start, sc_start, repeat).
  void start() {
    start_pending_ = true;
    start_event_.notify(sc_core::SC_ZERO_TIME);
  }

  // After sc_start(): rethrows an error raised while executing (e.g. an uninitialized register read).
  void rethrow_if_failed() const {
    if (error_) std::rethrow_exception(error_);
  }

  const Params& params() const { return params_; }
  uint64_t cycles() const { return cycles_; }
  uint64_t instructions() const { return instructions_; }
  const std::array<uint64_t, isa::kOpcodeCount>& per_opcode() const { return per_opcode_; }
  const symbolic::Aliases& aliases() const { return aliases_; }
  uint64_t kernel_syncs() const { return kernel_syncs_; }

 private:
  struct Decoded {
    isa::Opcode op;
    bool round_on_store;  // STORE into a tensor whose dtype differs from the registers'
    int32_t dst;          // register written, -1 for STORE
    std::array<int32_t, 3> src;
    uint8_t source_count;
    uint8_t unit;  // which unit (DRAM port, MAC, ALU) the pipelined scoreboard must find free
    int32_t tensor;
    int64_t address;
    uint32_t latency;
  };

  // A stretch of a scalar program: decoded instructions, the instructions they came from (for errors and
  // aliases) and the index of the first in the whole program.
  static constexpr size_t kNoWindow = SIZE_MAX;
  struct ScalarWindow {
    std::span<const Decoded> code;
    std::span<const isa::Instruction> instructions;
    size_t first = kNoWindow;  // none yet
  };

  void run_thread();
  void decode_scalar(std::span<const isa::Instruction> instructions, std::vector<Decoded>& out) const;
  // The next stretch to run: the whole in-memory program, or the next chunk of a streamed one as it
  // arrives (decoded into code_); false at the end. A loop over windows keeps its state in locals.
  bool next_scalar_window(ScalarWindow& window, isa::Chunk& chunk);
  template <Dtype D, Issue kIssue>
  void execute_numeric();
  template <Issue kIssue>
  void execute_symbolic();
  void execute();
  [[noreturn]] void uninitialized_read(const isa::Instruction& instruction, int source) const;
  void finish(uint64_t end_cycle);

  // Advances local time; syncs with the kernel when a quantum has accumulated, and then reports progress
  // (so a run pays for it once a quantum, not per instruction).
  void keep_quantum(uint64_t now, uint64_t executed) {
    if (now - synced_cycle_ >= quantum_) [[unlikely]] {
      sync(now);
      if (progress_) progress_(executed, now);
    }
  }
  void sync(uint64_t now);
  // Simulated time of cycle `cycle` of this run, in integer picoseconds: an InputError past SystemC's
  // time horizon instead of a wrapped time.
  sc_core::sc_time time_of_cycle(uint64_t cycle) const;
  // Whole cycles since the run started, read back from the kernel's time in integers.
  uint64_t cycles_since_start() const;

  // The tile path (tile_path.cpp): one TileCore runs the whole program, block after block.
  void load_tiles(const isa::Program& program, bool timing_only);
  void execute_tiles();
  void decode_chunk(const std::vector<isa::Instruction>& instructions,
                    const std::vector<isa::TileRef>& tiles);

  Params params_;
  SequencerUnits units_;
  Dram* dram_;
  RegisterFile* regfile_;
  MacUnit* mac_;
  Alu* alu_;

  bool tile_mode_ = false;
  bool timing_only_ = false;
  std::vector<TileDecoded> tile_code_;
  std::vector<TensorState> tensors_;
  std::unique_ptr<TileCore> tile_core_;
  BlockContext tile_context_;

  const isa::Program* program_ = nullptr;
  std::vector<Decoded> code_;
  Dtype dtype_ = Dtype::F32;
  bool symbolic_ = false;
  StepObserver* observer_ = nullptr;
  Progress progress_;
  std::exception_ptr error_;
  symbolic::Aliases aliases_;

  sc_core::sc_event start_event_;
  bool start_pending_ = false;  // the first run starts at initialisation, before any wait
  sc_core::sc_time run_start_;
  sc_core::sc_time period_;
  uint64_t quantum_ = 0;
  uint64_t synced_cycle_ = 0;

  uint64_t cycles_ = 0;
  uint64_t instructions_ = 0;
  uint64_t kernel_syncs_ = 0;
  uint64_t stall_cycles_ = 0;
  std::array<uint64_t, isa::kOpcodeCount> per_opcode_{};
};

void register_sequencer_params(ParamReader& reader, Sequencer::Params& params);

}  // namespace attnsim
