// `attnsim run --html FILE`: one self-contained HTML page that steps through a single-core run. The page
// draws the machine as blocks (DRAM or HBM, the register file or the SRAM buffers, the units), lists the
// trace with the current instruction highlighted, shows every register (number, and expression with
// --symbolic) or every buffer, the off-chip traffic and the cycles so far, and a Gantt strip of each
// instruction's issue and done cycle so that pipelined overlap is visible. Arrow keys, Home/End and a slider
// step through it; `#step=N` in the address opens step N.
//
// The page needs nothing beyond itself (no network, no external script): CSS and script are inline and the
// run is a JSON blob in a <script type="application/json"> element, so a class can open it from a USB stick
// or a mail attachment. Like --timeline and --vcd it is bounded: the first `limit` instructions are kept and
// the page says where it stopped.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "isa/dtype.h"
#include "isa/program.h"
#include "models/common/symbolic.h"
#include "models/sequencer/sequencer.h"

namespace attnsim {

class Dram;
class Hbm;
class RegisterFile;

class HtmlRecorder : public StepObserver {
 public:
  struct Options {
    size_t limit = 10000;                     // instructions kept; later ones are counted, not shown
    std::string config_path;                  // shown in the page's title line
    std::string issue;                        // "blocking" or "pipelined"
    const RegisterFile* registers = nullptr;  // scalar machines: read after each step
    const Dram* dram = nullptr;               // scalar machines: reads and writes per tensor
    const Hbm* hbm = nullptr;                 // tile machines: bytes per tensor
    std::vector<uint64_t> sram_bytes;         // tile machines: SRAM bytes of each buffer (0 for `regs` ones)
    uint64_t sram_capacity = 0;               // tile machines: the SRAM's size in bytes
    uint64_t sram_alignment = 1;              // tile machines: where each buffer may start
    Dtype dtype = Dtype::F32;                 // the machine's dtype: buffers declared without one
  };
  // What the page says about the whole run (known only after it).
  struct Totals {
    std::string machine;
    uint64_t cycles = 0;
    uint64_t instructions = 0;
  };

  HtmlRecorder(const isa::Program& program, Options options);

  void after_step(size_t index, uint64_t issue, uint64_t done) override;
  // The page. `aliases` name stored symbolic values (c00); they are known only once the run has ended.
  std::string html(const symbolic::Aliases& aliases, const Totals& totals) const;
  size_t recorded() const { return steps_.size(); }
  size_t dropped() const { return dropped_; }

 private:
  struct Traffic {
    int32_t tensor;
    uint64_t read, written;  // DRAM elements (scalar) or HBM bytes (tile) moved by this step
  };
  struct Step {
    uint32_t index;
    uint64_t issue, done;
    std::vector<Traffic> traffic;
    int32_t reg = -1;  // scalar: the register written
    double value = 0;
    symbolic::Expr expr;
    std::vector<int32_t> reads;   // scalar: registers read; tile: buffers read
    std::vector<int32_t> writes;  // tile: buffers written
    uint64_t sram = 0;            // tile: SRAM bytes holding data after this step
  };
  void record_traffic(Step& step);
  void scalar_operands(const isa::Instruction& inst, Step& step) const;
  void tile_operands(const isa::Instruction& inst, Step& step);
  nlohmann::json step_json(const Step& step, const symbolic::Aliases& aliases,
                           size_t& expression_chars) const;
  nlohmann::json layout_json() const;

  const isa::Program& program_;
  Options options_;
  bool tiles_;
  std::vector<Step> steps_;
  size_t dropped_ = 0;
  std::vector<uint64_t> read_so_far_, written_so_far_;  // per tensor, at the last recorded step
  std::vector<uint8_t> buffer_written_;
  uint64_t sram_ = 0;
};

}  // namespace attnsim
