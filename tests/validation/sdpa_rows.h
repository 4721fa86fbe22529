// The 72 (case, pass) rows of PyTorch's SDPA measurements (validation/run_dram_sweep.sh part B: six shapes,
// causal and not, three backends' forward and backward), as the row tests of both GPUs name them.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
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

// A row test's figures (predicted, measured) in `dir`, for the test over all rows (built from the same
// source; tests/validation/CMakeLists.txt, attnsim_rows_and_totals).
inline void write_row_result(const std::filesystem::path& dir, const SdpaRow& r, double predicted,
                             double measured) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / (sdpa_row_name(r) + ".txt"));
  out.precision(17);
  out << predicted << " " << measured << "\n";
  ASSERT_TRUE(out.good()) << dir;
}

// Every row's figures as the row tests left them, in the order of `rows`; a missing file, or one older than
// the row tests' binary `row_tests` (a stale run cannot pass), fails the test.
inline void read_row_results(const std::filesystem::path& dir, const std::filesystem::path& row_tests,
                             const std::vector<SdpaRow>& rows, std::vector<double>& predicted,
                             std::vector<double>& measured) {
  const auto built = std::filesystem::last_write_time(row_tests);
  for (const SdpaRow& r : rows) {
    const std::filesystem::path file = dir / (sdpa_row_name(r) + ".txt");
    ASSERT_TRUE(std::filesystem::exists(file)) << file << ": ctest runs the row tests first";
    ASSERT_GE(std::filesystem::last_write_time(file), built) << file << " is older than the row tests";
    std::ifstream in(file);
    double p = 0, m = 0;
    in >> p >> m;
    ASSERT_TRUE(in && m > 0) << file;
    predicted.push_back(p), measured.push_back(m);
  }
}

}  // namespace attnsim
