// Off-chip HBM as a machine component: hbm_timing.h underneath, tensors laid out at aligned addresses,
// and the ledger of bytes read and written per tensor (requested by the program and transferred after
// sector rounding). YAML: `preset:` (a name from hbm_presets.h) fills every field; keys set beside it
// override single fields.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/common/bandwidth_calendar.h"
#include "models/common/component.h"
#include "models/common/memory_level.h"
#include "models/common/params.h"
#include "models/hbm/hbm_timing.h"

namespace attnsim {

class Hbm : public Component, public MemoryLevel {
 public:
  struct Params {
    std::string preset = "hbm3_h100_sxm_80gb";  // a name from hbm_presets(); HbmParams{} is this preset
    hbm::HbmParams timing;
    // Layout: allocate() puts the first tensor at first_tensor_address (rounded up to the alignment) and
    // each tensor at a multiple of tensor_alignment_bytes (0: of interleave_bytes). A GPU's allocator
    // decides both (PyTorch's caching allocator gives each tensor over 10 MiB its own 2 MiB-aligned
    // segment), and the L2's set and partition hashes see them.
    uint64_t tensor_alignment_bytes = 0;
    uint64_t first_tensor_address = 0;
    // Whole-chip runs (use_calendar): one bandwidth calendar over all channels, or one per channel with
    // addresses dealt to the channels by interleave_bytes or hashed over them (docs/models/hbm.md).
    enum class ChipChannels { Pooled, Interleaved, Hashed };
    ChipChannels chip_channels = ChipChannels::Pooled;
  };
  Hbm(sc_core::sc_module_name instance, const Params& params, double core_clock_ghz);
  const Params& params() const { return params_; }

  // Lays tensors out in order (each aligned as Params say); returns their base addresses and
  // resets the ledger and the timing model (channel state too: a program starts at cycle 0). Throws
  // InputError(file, {}, ...) naming the tensors if capacity is exceeded.
  std::vector<uint64_t> allocate(const std::vector<std::string>& names, const std::vector<uint64_t>& bytes,
                                 const std::string& file);

  // A rows x row_bytes transfer with a stride, for tensor `tensor` (-1: not charged to any tensor);
  // returns the completion cycle. Throws InputError if the range passes capacity or the stride is
  // shorter than a row.
  uint64_t transfer2d(int tensor, uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride_bytes,
                      bool is_write, uint64_t issue_cycle);

  uint64_t access(const MemAccess& a, uint64_t issue_cycle) override {
    return transfer2d(a.tensor, a.addr, a.rows, a.row_bytes, a.stride_bytes, a.is_write, issue_cycle);
  }
  // Whole-chip mode: when the last access's bytes had their bandwidth, before the latency.
  uint64_t last_accepted_cycle() const override { return accepted_; }

  // Whole-chip mode: cores run ahead of each other (temporal decoupling), so requests arrive out of time
  // order and the channel model's busy-until times are not causal. Decoupled, every request is timed by
  // bandwidth calendars plus the fixed latency (one over all channels at the peak bandwidth, or one per
  // channel: Params::chip_channels); the ledger is the same.
  void use_calendar(uint64_t window_cycles);
  // No request will arrive before `cycle` any more (the calendars drop older windows).
  void forget_before(uint64_t cycle);
  // The channel an address's interleave unit goes to under Params::chip_channels (per-channel calendars).
  uint32_t chip_channel_of(uint64_t addr) const;
  // The core clock that turns the DRAM's nanoseconds into cycles; takes effect at the next place().
  void set_core_clock_ghz(double ghz);
  // Where the next allocate() puts the first tensor (Params::first_tensor_address): the same program at
  // another placement, without building the machine again (attnsim validate --placements).
  void set_first_tensor_address(uint64_t address) { params_.first_tensor_address = address; }

  const hbm::HbmTiming& timing() const { return *timing_; }

  std::vector<std::string> tensor_names;
  std::vector<uint64_t> bytes_read_per_tensor;        // requested by the program
  std::vector<uint64_t> bytes_written_per_tensor;     // requested by the program
  std::vector<uint64_t> transferred_read_per_tensor;  // after sector rounding
  std::vector<uint64_t> transferred_written_per_tensor;
  // Totals over all tensors, since allocate().
  uint64_t bytes_read = 0;  // requested
  uint64_t bytes_written = 0;
  uint64_t transferred_read = 0;  // after sector rounding
  uint64_t transferred_written = 0;

 private:
  Params params_;
  double core_clock_ghz_;
  std::string file_;  // the program allocate() laid out, for errors from transfer2d
  std::unique_ptr<hbm::HbmTiming> timing_;
  std::unique_ptr<BandwidthCalendar> calendar_;       // chip_channels: pooled
  std::vector<BandwidthCalendar> channel_calendars_;  // per channel, unless chip_channels is Pooled
  uint64_t accepted_ = 0;
  uint64_t calendar_window_ = 0;  // non-zero: whole-chip timing (use_calendar)
  uint64_t calendar_transfer(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride_bytes,
                             uint64_t issue_cycle, uint64_t& transferred);
  uint64_t serve_on_channels(uint64_t begin, uint64_t end, uint64_t issue_cycle);
};

void register_hbm_models();  // YAML type "hbm"; the core clock comes from the BuildContext

}  // namespace attnsim
