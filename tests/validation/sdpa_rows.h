// The 72 (case, pass) rows of PyTorch's SDPA measurements (validation/run_dram_sweep.sh part B: six shapes,
// causal and not, three backends' forward and backward), as the row tests of both GPUs name them.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace attnsim {

struct SdpaRow {
  std::string backend, pass;
  int64_t batch, heads, n, d;
  bool causal;
  // The label the measurements CSV gives the row ("FLASH_ATTENTION fwd 1x16").
  std::string label() const {
    return backend + " " + pass + " " + std::to_string(batch) + "x" + std::to_string(heads);
  }
};

inline void PrintTo(const SdpaRow& r, std::ostream* os) {
  *os << r.backend << " " << r.pass << " " << r.batch << "x" << r.heads << " n=" << r.n << " d=" << r.d
      << (r.causal ? " causal" : "");
}

inline std::vector<SdpaRow> all_sdpa_rows() {
  const std::vector<std::array<int64_t, 4>> shapes = {{1, 16, 4096, 64},  {4, 16, 4096, 64},
                                                      {8, 32, 2048, 128}, {1, 16, 8192, 128},
                                                      {1, 16, 16384, 64}, {1, 8, 32768, 128}};
  const std::vector<std::array<const char*, 2>> kernels = {
      {"FLASH_ATTENTION", "fwd"}, {"FLASH_ATTENTION", "bwd"},     {"CUDNN_ATTENTION", "fwd"},
      {"CUDNN_ATTENTION", "bwd"}, {"EFFICIENT_ATTENTION", "fwd"}, {"EFFICIENT_ATTENTION", "bwd"}};
  std::vector<SdpaRow> out;
  for (const auto& [backend, pass] : kernels)
    for (const auto& [b, h, n, d] : shapes)
      for (bool causal : {false, true}) out.push_back({backend, pass, b, h, n, d, causal});
  return out;
}

// "FLASH_fwd_1x16x4096x64_causal": a test name and a file name.
inline std::string sdpa_row_name(const SdpaRow& r) {
  return r.backend.substr(0, r.backend.find('_')) + "_" + r.pass + "_" + std::to_string(r.batch) + "x" +
         std::to_string(r.heads) + "x" + std::to_string(r.n) + "x" + std::to_string(r.d) +
         (r.causal ? "_causal" : "");
}

inline std::string sdpa_test_name(const ::testing::TestParamInfo<SdpaRow>& info) {
  return sdpa_row_name(info.param);
}

}  // namespace attnsim
