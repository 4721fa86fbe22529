// Issue 8's bound for kernels never used in calibration: PyTorch's FlashAttention-2 forward and backward
// and cuDNN's forward and backward, simulated with their tiles and grids, within a 20% mean absolute time
// error of the measured (validation/data/h100_sdpa_cases.csv, ncu at base clocks, each row at the SM clock it
// ran at). The rows are simulated by test_sdpa_rows.cpp, one ctest each and side by side; each leaves its
// predicted and measured time in ATTNSIM_SDPA_TIMES_DIR. ctest runs this test after all of them (fixture
// sdpa_times); files older than the row tests' executable are refused, so a stale run cannot pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/validate.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

using RowKey = std::tuple<std::string, int64_t, int64_t, bool>;  // label, n, d, causal

struct Times {
  double predicted_ns = 0, measured_ns = 0;
};

std::map<RowKey, Times> times_left_by_the_row_tests() {
  const std::filesystem::path dir = ATTNSIM_SDPA_TIMES_DIR;
  const auto built = std::filesystem::last_write_time(ATTNSIM_SDPA_ROW_TESTS);
  std::map<RowKey, Times> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".txt" || entry.last_write_time() < built) continue;
    std::ifstream in(entry.path());
    std::string label;
    int64_t n = 0, d = 0;
    int causal = 0;
    Times t;
    std::getline(in, label, '\t');
    in >> n >> d >> causal >> t.predicted_ns >> t.measured_ns;
    if (in) out[{label, n, d, causal != 0}] = t;
  }
  return out;
}

TEST(SdpaTimes, FlashAttentionAndCudnnWithinTwentyPercent) {
  const std::map<RowKey, Times> times = times_left_by_the_row_tests();
  std::map<std::string, std::vector<double>> errors;  // by kernel: "FLASH_ATTENTION fwd", ...
  for (const Measurement& m : read_measurements(kRoot + "/validation/data/h100_sdpa_cases.csv")) {
    // The memory-efficient backward's rows run under the label `long` (test_sdpa_rows.cpp), not before this.
    if (!m.not_simulated.empty() || m.label.starts_with("EFFICIENT_ATTENTION bwd")) continue;
    const auto it = times.find({m.label, m.n, m.d, m.causal});
    ASSERT_NE(it, times.end()) << m.label << " n=" << m.n << " d=" << m.d << (m.causal ? " causal" : "")
                               << ": no time from this build's sdpa_row_tests (ctest runs them first)";
    EXPECT_DOUBLE_EQ(it->second.measured_ns, m.time_ns) << m.label;
    const std::string kernel = m.label.substr(0, m.label.rfind(' '));
    errors[kernel].push_back(std::abs(it->second.predicted_ns / m.time_ns - 1));
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double e : v) sum += e;
    return sum / static_cast<double>(v.size());
  };
  std::vector<double> named;  // the kernels the issue names
  for (const char* kernel :
       {"FLASH_ATTENTION fwd", "FLASH_ATTENTION bwd", "CUDNN_ATTENTION fwd", "CUDNN_ATTENTION bwd"}) {
    const std::vector<double>& e = errors[kernel];
    ASSERT_EQ(e.size(), 12u) << kernel;
    EXPECT_LT(mean(e), 0.20) << kernel;
    std::printf("%s: MAPE %.1f%% over %zu rows\n", kernel, 100 * mean(e), e.size());
    named.insert(named.end(), e.begin(), e.end());
  }
  EXPECT_LT(mean(named), 0.20);
  std::printf("FlashAttention-2 and cuDNN: MAPE %.1f%% over %zu rows\n", 100 * mean(named), named.size());
  const std::vector<double>& efficient = errors["EFFICIENT_ATTENTION fwd"];
  ASSERT_EQ(efficient.size(), 12u);
  // Not among the kernels. With its code's mma shape and CUTLASS's iterative softmax counted
  // (docs/models/issue.md) 0.77-0.86 of the measured, 17.1%, where it was 0.62-0.70, 31.5%: what is left is
  // its warps' latency (docs/validation.md, "The memory-efficient forward's instructions").
  std::printf("memory-efficient forward: MAPE %.1f%% over %zu rows\n", 100 * mean(efficient),
              efficient.size());
  EXPECT_LT(mean(efficient), 0.20);
}

}  // namespace
}  // namespace attnsim
