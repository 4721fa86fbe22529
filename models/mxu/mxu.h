// The MXU as a machine component: a (set of) systolic arrays timed by mxu_timing.h, with stats, and the
// matrix product on tile values. `arrays` > 1 (TPU v5e has 4) splits the N columns (or, dealt by M, the
// rows) of a matmul evenly over the arrays, which work in parallel.
#pragma once

#include "isa/dtype.h"
#include "models/common/component.h"
#include "models/common/params.h"
#include "models/common/tile.h"
#include "models/mxu/mxu_timing.h"

namespace attnsim {

class MxuUnit : public Component {
 public:
  // Which extent of a matmul is split over the arrays.
  enum class Deal {
    kN,  // columns (TPU v5e's arrays; the presets' stand-in for mma.sync: docs/models/mxu.md, "Feeds")
    kM,  // rows (wgmma: each of a warp group's four warps owns 16 rows, on its sub-partition's tensor core)
  };
  // How the operand every array needs whole (B when M is dealt, A when N is) leaves SRAM.
  enum class SharedOperand {
    kOnce,      // read once and broadcast to the arrays (wgmma: B from shared memory reaches all four)
    kPerArray,  // each array that works reads it (mma.sync: every warp ldmatrix-loads its own copy)
  };
  // How matmuls are fed to the arrays: the operand path a kernel's instructions choose on one machine
  // (mma.sync or wgmma on a Hopper SM).
  struct Feed {
    mxu::HandOff hand_off = mxu::HandOff::kTile;
    Deal deal = Deal::kN;
    SharedOperand shared_operand = SharedOperand::kOnce;
    bool operator==(const Feed&) const = default;
  };
  struct Params {
    mxu::MxuGeometry geometry;
    Deal deal = Deal::kN;
    SharedOperand shared_operand = SharedOperand::kOnce;
    // Cycles after a matmul's last cycle on the array before an instruction that reads its result may
    // start; the array serves other work meanwhile (on a GPU: the fragment loads and the last mma's
    // latency, which other warps hide and a lone warp waits out). 0: the result is ready when the array is.
    int64_t result_latency = 0;
    int64_t arrays = 1;
  };
  MxuUnit(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }
  Feed feed() const { return {params_.geometry.hand_off, params_.deal, params_.shared_operand}; }
  // For the matmuls from now on (validate switches it per measured kernel). Throws std::invalid_argument
  // for a cell hand-off on an array that is not output-stationary.
  void set_feed(const Feed& feed);
  // For the matmuls from now on (validate: the FFMA kernels run none of the tensor-core code it stands for).
  void set_result_latency(int64_t cycles) { params_.result_latency = cycles; }

  // Cycles the unit is busy for D(MxN) = A(MxK) B(KxN) (+ C); records matmuls, MACs, FLOPs, busy cycles,
  // folds and stalls.
  uint64_t matmul(int64_t m, int64_t k, int64_t n);
  // The operand of D(MxN) = A B that every working array needs whole (0: A, when N is dealt; 1: B, when M
  // is), and how many times SRAM sends it: once, or once per array that gets a share of the dealt extent.
  int shared_operand_index() const { return params_.deal == Deal::kM ? 1 : 0; }
  int64_t shared_operand_reads(int64_t m, int64_t n) const;

  // Values: d = a * b (+ c when c is non-null), accumulated in float64 and rounded once to `dtype`
  // per element. a, b may be transposed views; d must not alias a or b.
  static void compute(const TileView& a, const TileView& b, const TileView* c, const TileView& d,
                      Dtype dtype);

  // The run's length, for utilisation = MACs / (rows * cols * arrays * elapsed).
  void set_elapsed(uint64_t cycles) { elapsed_cycles = cycles; }

  uint64_t matmuls = 0;
  uint64_t macs = 0;
  uint64_t busy_cycles = 0;
  uint64_t folds = 0;
  uint64_t stall_cycles = 0;
  uint64_t elapsed_cycles = 0;

 private:
  Params params_;
};

void register_mxu_models();  // YAML type "systolic"

}  // namespace attnsim
