// What an H200's L2 holds of each tensor when PyTorch's memory-efficient backward kernel ends
// (validation/data/h200_memeff_residency.csv: validation/run_memeff_residency.sh reads every tensor once
// after the kernel under ncu --cache-control none; what reaches DRAM is what the L2 no longer held), beside
// what the model holds then (L2Cache::resident_bytes_at_kernel_end). One head of n = 8,192 (64 blocks, one
// per SM, everything fits): the GPU holds every tensor whole, outputs and the f32 workspace included, and
// the whole local frame (136 bytes a thread) of each of the 64 slots that ran a block; so must the model.
// Past one wave: validation/data/h100_memeff_residency_auto.csv, read with about 1 MiB of each tensor (read
// every 5th line, as the older files were, a large tensor's own misses push out what the probe has yet to
// read: docs/validation.md, "The residency probe read itself out").
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/validate.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

// Resident bytes per target of one case: bytes x (1 - absent_fraction).
std::map<std::string, double> measured_resident(const std::string& kernel, int heads, int n, int causal,
                                                const std::string& file = "h200_memeff_residency.csv") {
  std::ifstream in(kRoot + "/validation/data/" + file);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream ss(line); std::getline(ss, line, ',');) header.push_back(line);
  std::map<std::string, double> out;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::stringstream ss(line);
    for (const std::string& name : header) std::getline(ss, row[name], ',');
    if (row["kernel"] == kernel && row["batch"] == "1" && row["heads"] == std::to_string(heads) &&
        row["n"] == std::to_string(n) && row["causal"] == std::to_string(causal))
      out[row["target"]] = std::stod(row["bytes"]) * (1 - std::stod(row["absent_fraction"]));
  }
  return out;
}

// A row of the heads sweep (1 x heads x 8,192 x 128 without the mask, measured on an H100: the same
// kernel, grid and occupancy as on the H200) on a preset.
ValidationRow simulate_heads_row(int heads, const std::string& config,
                                 const std::vector<std::string>& overrides = {}) {
  const std::string data = kRoot + "/validation/data/h100_memeff_bwd_heads_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.label == "EFFICIENT_ATTENTION bwd 1x" + std::to_string(heads) && m.n == 8192 && m.d == 128 &&
        !m.causal)
      rows.push_back(m);
  EXPECT_EQ(rows.size(), 1u);
  if (rows.size() != 1) return {};
  const ValidationSummary s = validate(kRoot + "/configs/" + config, data, rows, overrides);
  EXPECT_EQ(s.rows.size(), 1u);
  return s.rows.empty() ? ValidationRow{} : s.rows[0];
}

// MiB of the kernel's tensors and local frames (named `local` on each side) held at the end.
template <typename Bytes>
double held_mib(const std::map<std::string, Bytes>& held, const std::string& local) {
  double bytes = 0;
  for (const std::string name : {"Q", "K", "V", "O", "dO", "dQaccum", "dQ", "dK", "dV", local.c_str()})
    bytes += held.count(name) ? static_cast<double>(held.at(name)) : 0;
  return bytes / (1 << 20);
}

double model_mib(const ValidationRow& row) {
  return held_mib(row.predicted_l2_resident_by_tensor, "local");
}

TEST(MemEfficientResidency, OneHeadEndsWithEverythingInL2AsOnTheH200) {
  const std::map<std::string, double> gpu = measured_resident("fmha_cutlassB", 1, 8192, 0);
  const ValidationRow row = simulate_heads_row(1, "h200.yaml");
  const std::map<std::string, uint64_t>& model = row.predicted_l2_resident_by_tensor;
  constexpr double kTensor = 8192.0 * 128 * 2;  // one head's Q, K, V, O, dO, dQ, dK or dV (f16)
  for (const std::string name : {"Q", "K", "V", "O", "dO", "dQ", "dK", "dV", "dQaccum"}) {
    const double bytes = name == std::string("dQaccum") ? 2 * kTensor : kTensor;
    ASSERT_TRUE(gpu.count(name)) << name;
    ASSERT_TRUE(model.count(name)) << name;
    EXPECT_NEAR(gpu.at(name) / bytes, 1.0, 0.01) << name << " on the GPU";
    EXPECT_NEAR(static_cast<double>(model.at(name)) / bytes, gpu.at(name) / bytes, 0.03) << name;
  }
  // Local memory: the frames of the slots that ran a block, 64 x 69,632 bytes (read back by one block of
  // 512 threads per SM: half the SMs ran none).
  ASSERT_TRUE(gpu.count("local_one_per_sm"));
  ASSERT_TRUE(model.count("local"));
  EXPECT_NEAR(static_cast<double>(model.at("local")) / gpu.at("local_one_per_sm"), 1.0, 0.08);
}

// Two heads on the H100 (128 blocks, one wave): the GPU ends holding 35.7 MiB of the kernel's tensors and
// frames. The preset, whose stores leave no copy, ends 4.5 MiB above that; with a copy of every far store
// in the writer's partition (l2.store_copies, what the H100's own between probe found) 0.9 above, as on
// every longer row measured (docs/validation.md, "The residency probe read itself out"). Two tests: a
// process builds one machine.
double two_heads_on_the_h100_mib() {
  return held_mib(measured_resident("fmha_cutlassB", 2, 8192, 0, "h100_memeff_residency_auto.csv"),
                  "local_one_per_sm");
}

// If this breaks, the preset has moved towards the GPU: update the docs' table.
TEST(MemEfficientResidency, TwoHeadsOnTheH100PresetEndWithMoreThanTheGpu) {
  const double gpu = two_heads_on_the_h100_mib();
  EXPECT_NEAR(gpu, 35.7, 0.1);
  const double preset = model_mib(simulate_heads_row(2, "h100.yaml"));
  EXPECT_GT(preset - gpu, 3.0) << preset;
}

TEST(MemEfficientResidency, TwoHeadsOnTheH100EndWithTheRoomCopiesOfStoresLeave) {
  const double gpu = two_heads_on_the_h100_mib();
  const double copies = model_mib(simulate_heads_row(2, "h100.yaml", {"l2.store_copies=true"}));
  EXPECT_LT(std::abs(copies - gpu), 1.5) << copies;
}

}  // namespace
}  // namespace attnsim
