// Named HBM configurations of real parts. Sources and estimates are cited next to each number in
// hbm_presets.cpp.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/hbm/hbm_timing.h"

namespace attnsim::hbm {

struct HbmPreset {
  std::string_view name;
  std::string_view memory_type;  // JEDEC generation as the vendor names it
  uint32_t stacks;
  uint32_t pseudo_channels_per_stack;  // params.channels == stacks * pseudo_channels_per_stack
  HbmParams params;
};

HbmParams hbm2_a100_40gb();
HbmParams hbm2e_a100_80gb();
HbmParams hbm3_h100_sxm_80gb();
HbmParams hbm3e_h200_141gb();
HbmParams hbm2_tpu_v5e_like_16gb();

const std::vector<HbmPreset>& hbm_presets();
// Throws std::invalid_argument naming the known presets if `name` is not one of them.
const HbmPreset& hbm_preset(std::string_view name);

}  // namespace attnsim::hbm
