#include "models/hbm/hbm_presets.h"

#include <stdexcept>
#include <string>

namespace attnsim::hbm {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

// JEDEC JESD235 (HBM2/HBM2e): 8 channels of 128 bits per stack, each split into two 64-bit
// pseudo-channels in pseudo-channel mode.
constexpr uint32_t kHbm2PseudoChannelsPerStack = 16;
// JEDEC JESD238 (HBM3; HBM3e keeps the organisation): 16 channels of 64 bits per stack, each
// split into two 32-bit pseudo-channels.
constexpr uint32_t kHbm3PseudoChannelsPerStack = 32;

// 32 B: the sector NVIDIA GPUs move between L2 and DRAM (CUDA C++ Best Practices Guide,
// "Coalesced Access to Global Memory": 32-byte transactions). It is also one burst of one HBM
// pseudo-channel: HBM2 64 bits x BL4, HBM3 32 bits x BL8 (JESD235 / JESD238), so the DRAM burst
// time tBL is sector_transfer_cycles() and needs no parameter of its own.
constexpr uint64_t kSectorBytes = 32;

// 256 B: estimate. NVIDIA does not publish its address-to-channel hash; GPGPU-Sim's shipped GPU
// configs take the channel id from address bit 8 (-gpgpu_mem_addr_mapping dramid@8), i.e. 256 B.
constexpr uint64_t kInterleaveBytes = 256;

// 500 ns: estimate, rounded. Pointer-chasing microbenchmarks of A100/H100 (Chips and Cheese,
// "Nvidia's H100: Funny L2, and Tons of Bandwidth", 2023; Luo et al., "Benchmarking and Dissecting
// the Nvidia Hopper GPU Architecture", arXiv:2402.13499) put DRAM load-to-use latency at several
// hundred ns; their exact figures are not transcribed here. Calibrate before relying on it.
constexpr double kGpuDramLatencyNs = 500.0;

// Estimates from open-source DRAM simulators, not a vendor datasheet: DRAMsim3
// configs/HBM2_8Gb_x128.ini has tCK = 1 ns with CL = tRCDRD = tRP = 14 cycles (14 ns),
// 4 bank groups x 4 banks, and 64 columns x 128 bits = 1 KiB rows; Ramulator2's HBM2
// organisation presets also use 4 x 4 banks.
HbmBankParams hbm2_bank() {
  HbmBankParams bank;
  bank.banks_per_channel = 16;
  bank.row_bytes = 1024;
  bank.t_rcd_ns = 14.0;
  bank.t_rp_ns = 14.0;
  bank.t_cl_ns = 14.0;
  return bank;
}

// Estimate: Ramulator2 (src/dram/impl/HBM3.cpp) keeps 4 bank groups x 4 banks per
// pseudo-channel and HBM2's 64-column rows. Its only HBM3 timing preset (7 ns CL/RCD/RP at
// 2 Gb/s) is marked TODO by its authors, so HBM2's 14 ns is kept: DRAM array timings in ns
// change little between generations.
HbmBankParams hbm3_bank() {
  return hbm2_bank();
}

}  // namespace

HbmParams hbm2_a100_40gb() {
  HbmParams p;
  // NVIDIA A100 Tensor Core GPU Architecture whitepaper: 40 GB HBM2 at 1555 GB/s from five
  // active HBM2 stacks (ten 512-bit memory controllers). NVIDIA's "GB" capacities track GiB.
  p.capacity_bytes = 40 * kGiB;
  p.peak_bandwidth_gbps = 1555.0;
  p.channels = 5 * kHbm2PseudoChannelsPerStack;
  p.interleave_bytes = kInterleaveBytes;
  p.access_granularity_bytes = kSectorBytes;
  p.latency_ns = kGpuDramLatencyNs;
  p.bank = hbm2_bank();
  return p;
}

HbmParams hbm2e_a100_80gb() {
  HbmParams p;
  // NVIDIA A100 Tensor Core GPU datasheet: A100 80GB SXM, 80 GB HBM2e at 2039 GB/s. Five
  // stacks is an estimate: the datasheet gives no stack count, and the A100 whitepaper's
  // five-stack, 5120-bit interface is assumed unchanged.
  p.capacity_bytes = 80 * kGiB;
  p.peak_bandwidth_gbps = 2039.0;
  p.channels = 5 * kHbm2PseudoChannelsPerStack;
  p.interleave_bytes = kInterleaveBytes;
  p.access_granularity_bytes = kSectorBytes;
  p.latency_ns = kGpuDramLatencyNs;
  p.bank = hbm2_bank();
  return p;
}

HbmParams hbm3_h100_sxm_80gb() {
  HbmParams p;
  // NVIDIA H100 Tensor Core GPU datasheet: H100 SXM, 80 GB HBM3 at 3.35 TB/s. NVIDIA H100
  // Tensor Core GPU Architecture whitepaper: five HBM3 stacks, ten 512-bit memory controllers.
  p.capacity_bytes = 80 * kGiB;
  p.peak_bandwidth_gbps = 3350.0;
  p.channels = 5 * kHbm3PseudoChannelsPerStack;
  p.interleave_bytes = kInterleaveBytes;
  p.access_granularity_bytes = kSectorBytes;
  p.latency_ns = kGpuDramLatencyNs;
  p.bank = hbm3_bank();
  return p;
}

HbmParams hbm3e_h200_141gb() {
  HbmParams p;
  // NVIDIA H200 Tensor Core GPU datasheet: 141 GB HBM3e at 4.8 TB/s ("GB" taken as GiB, as for
  // the other NVIDIA parts; it only bounds the address range). Six stacks is an estimate: the
  // H100 architecture whitepaper's full GH100 has six HBM sites (twelve 512-bit controllers) and
  // 141 GB needs six 24 GB stacks.
  p.capacity_bytes = 141 * kGiB;
  p.peak_bandwidth_gbps = 4800.0;
  p.channels = 6 * kHbm3PseudoChannelsPerStack;
  p.interleave_bytes = kInterleaveBytes;
  p.access_granularity_bytes = kSectorBytes;
  p.latency_ns = kGpuDramLatencyNs;
  p.bank = hbm3_bank();
  return p;
}

HbmParams hbm2_tpu_v5e_like_16gb() {
  HbmParams p;
  // Google Cloud TPU documentation, "TPU v5e" system architecture: 16 GB HBM2 at 819 GBps.
  // Two stacks is an estimate: 819.2 GB/s = 2 stacks x 1024 bits x 3.2 Gb/s per pin.
  // Interleave, sector and latency reuse the GPU estimates above; Google publishes none.
  p.capacity_bytes = 16 * kGiB;
  p.peak_bandwidth_gbps = 819.0;
  p.channels = 2 * kHbm2PseudoChannelsPerStack;
  p.interleave_bytes = kInterleaveBytes;
  p.access_granularity_bytes = kSectorBytes;
  p.latency_ns = kGpuDramLatencyNs;
  p.bank = hbm2_bank();
  return p;
}

const std::vector<HbmPreset>& hbm_presets() {
  // Stack counts repeat the ones used (and cited) in the functions above.
  static const std::vector<HbmPreset> presets = {
      {"hbm2_a100_40gb", "HBM2", 5, kHbm2PseudoChannelsPerStack, hbm2_a100_40gb()},
      {"hbm2e_a100_80gb", "HBM2e", 5, kHbm2PseudoChannelsPerStack, hbm2e_a100_80gb()},
      {"hbm3_h100_sxm_80gb", "HBM3", 5, kHbm3PseudoChannelsPerStack, hbm3_h100_sxm_80gb()},
      {"hbm3e_h200_141gb", "HBM3e", 6, kHbm3PseudoChannelsPerStack, hbm3e_h200_141gb()},
      {"hbm2_tpu_v5e_like_16gb", "HBM2", 2, kHbm2PseudoChannelsPerStack, hbm2_tpu_v5e_like_16gb()},
  };
  return presets;
}

const HbmPreset& hbm_preset(std::string_view name) {
  std::string known;
  for (const HbmPreset& preset : hbm_presets()) {
    if (preset.name == name) return preset;
    known += known.empty() ? "" : ", ";
    known += preset.name;
  }
  throw std::invalid_argument("unknown HBM preset '" + std::string(name) + "'; known: " + known);
}

}  // namespace attnsim::hbm
