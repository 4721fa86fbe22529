// MXU timing model: closed-form cycle counts for one matmul on a systolic array, weight-, output- or
// input-stationary, with folding, stationary-operand loads/drains and double buffering. Pure C++ (no
// SystemC). Every rule is stated in docs/models/mxu.md and is checked against a tick-level emulator in
// tests/mxu, which moves the data cell by cell.
#pragma once

#include <cstdint>

namespace attnsim::mxu {

enum class Dataflow {
  kWeightStationary,  // B tile held in the array (TPU style): rows = K side, cols = N side
  kOutputStationary,  // C tile accumulates in the array: rows = M side, cols = N side
  kInputStationary,   // A tile held in the array: rows = K side, cols = M side (mirror of WS)
};

enum class Accounting {
  kArray,  // the array below: size limits, folds, loads and drains
  kIdeal,  // seed 003's accounting: M + K + N - 2 per matmul, array size and dataflow ignored
};

// How an output-stationary array's finished sums leave it.
enum class HandOff {
  // The finished tile leaves through the top edge, one row per cycle; the next pass starts once the
  // accumulators are free (double buffered: once the tile has moved to the output plane).
  kTile,
  // Each cell writes its sum out (to the register file) in the cycle after its own last MAC, so the next
  // pass's operands stream right behind the current pass's, K cycles apart: a tensor core fed by Hopper's
  // wgmma, whose accumulators live in registers. Output-stationary only.
  kCell,
};

struct MxuGeometry {
  int64_t rows = 128;
  int64_t cols = 128;
  Dataflow dataflow = Dataflow::kWeightStationary;
  Accounting accounting = Accounting::kArray;
  // WS/IS: a shadow weight plane, so the next tile loads while the current one streams.
  // OS: an output plane, so a finished tile drains while the next one accumulates.
  bool double_buffered_stationary = true;
  HandOff hand_off = HandOff::kTile;  // kCell has no output plane: double_buffered_stationary does not apply

  bool operator==(const MxuGeometry&) const = default;
};

struct MatmulTiming {
  // From cycle 0 (WS/IS: first weight row written; OS: first operands enter) to the cycle after the
  // last output leaves the array.
  uint64_t cycles = 0;
  uint64_t folds = 0;  // array-sized passes: WS K×N tiles, OS M×N tiles, IS K×M tiles
  // Cycles before the last input enters in which no input enters because the stationary plane is not
  // ready: WS/IS weight loads (the first load included) and OS accumulator hand-offs.
  uint64_t stall_cycles = 0;
  uint64_t macs = 0;  // useful multiply-accumulates, M * K * N

  bool operator==(const MatmulTiming&) const = default;
};

// C(M×N) = A(M×K) · B(K×N). Throws std::invalid_argument unless all extents and array sides are >= 1,
// M * K * N fits in 64 bits and a cell hand-off comes with the output-stationary dataflow. Cost is O(1): no
// loop over cycles, elements or folds.
MatmulTiming time_matmul(const MxuGeometry& geometry, int64_t m, int64_t k, int64_t n);

// macs / (rows * cols * cycles): the fraction of PE-cycles doing useful MACs. At most 1 under kArray;
// kIdeal ignores the array size, so it can exceed 1 there.
double utilisation(const MatmulTiming& timing, const MxuGeometry& geometry);

}  // namespace attnsim::mxu
