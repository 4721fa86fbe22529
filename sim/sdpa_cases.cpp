#include "sim/sdpa_cases.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <regex>

namespace attnsim {

namespace {

struct Tiles {
  int64_t block_q = 0, block_k = 0;
  int64_t warps = 0, warp_rows = 0;  // how the block's warps share a product (isa::KernelDecl::warps)
};

// flash_fwd_kernel: Flash_fwd_kernel_traits<head dim;kBlockM;kBlockN;kNWarps;...>. Its TiledMma lays the
// warps along M only, each a 16-row atom (rows w*16 + 16*kNWarps*r), every warp loading all of K_j and V_j.
std::optional<Tiles> forward_tiles(const std::string& kernel, const std::string& kernel_template) {
  std::smatch m;
  static const std::regex flash(R"(Flash_fwd_kernel_traits<(\d{1,6});(\d{1,6});(\d{1,6});(\d{1,3});)");
  if (kernel == "flash_fwd_kernel" && std::regex_search(kernel_template, m, flash))
    return Tiles{std::stoll(m[2]), std::stoll(m[3]), std::stoll(m[4]), 16};
  return std::nullopt;
}

// What FlashAttention-2's code spends beside its tile instructions (isa::CodeOverhead). Its CuTe code
// unrolls its loops at compile time and folds shared-memory offsets into immediates, so it runs far fewer
// address and control instructions than the project's kernels, which the machine's issue costs describe:
// with those, the model counted 1.21 and 1.15 times the warp instructions the forward executes at d = 128 and
// 64 (h200_fa2_fwd_profile_pairs.tar.gz, pairs64: 1,223 and 1,680 a warp and key block alone on an SM, of
// which the products, the softmax's arithmetic and the ldmatrix agree with the model's). From the d = 128
// profile's SASS: its address instructions (IADD3, IMAD, LEA, SHF, VIADD, ISETP: 35.3 a warp and key block)
// over its ldmatrix and cp.async (80 + 16.1) give 0.37 each; the fixed cost per warp and tile instruction
// then brings the model's count to the measured one (2.6; 1.7 before the row sum l, which the program keeps
// in SRAM for the row statistic's store, was read from the threads' registers: BufferState::register_copy).
// Held out: the d = 64 profile (1.005 of the measured), the H100's 1 x 16 x 4,096 x 64 and 1 x 16 x 8,192 x
// 128 forwards (h100_sdpa_profile_raw.csv). The backward's main kernel is the same CuTe code, not refit;
// its dQ atomics are FlashAttention-2's atomicAdd of one f32 a thread: 128 bytes a warp's red.global.add
// (h200_fa2_bwd_instructions.csv: FlashAttention2Instructions.*).
constexpr isa::CodeOverhead kFlashAttention2Overhead{2.6, 0.37, 0.37, 128};

// cuDNN's forward (cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x{d}): a
// persistent kernel, one block per SM looping over work tiles. Its template gives no tiles; 128 query rows
// per work tile match its SM<-L2 reads (64 would read K and V twice as often). Key blocks of 128 rows at
// d = 64 and 64 at d = 128, where the model's SRAM must also hold S and the O accumulator (the kernel keeps
// them in registers): the key tile changes no SM<->L2 byte without a mask and, causal, only where the
// diagonal falls (within 0.01% here).
// PyTorch's memory-efficient forward, fmha_cutlassF_<dtype>_aligned_<queries>x<keys>_rf_sm80: the tiles are
// in the name. Its SM<-L2 reads are flash2's with Q_i loaded again for every key block and a causal key
// range ending at the query block's last row (ForwardShape::as_mem_efficient), to the byte; its writes O
// plus the f32 log-sum-exp per row, and at 64 x 64 (d = 64) 512 bytes more per block on all six rows,
// taken from the measurements as the flash backward's spill stores are.
// Both memory-efficient kernels are CUTLASS sm80 builds whose f16 products are 16 x 8 x 8 mma instructions
// (HMMA.1688 in their SASS, validation/data/h200_memeff_profile.tar.gz and h200_memeff_fwd_profile.tar.gz):
// twice the instructions of FlashAttention-2's 16 x 8 x 16 for the same product.
constexpr std::array<int64_t, 3> kMemEfficientMma{16, 8, 8};

std::optional<Tiles> mem_efficient_tiles(const std::string& kernel) {
  std::smatch m;
  static const std::regex name(R"(^fmha_cutlassF_\w+?_(\d{1,6})x(\d{1,6})_rf_sm80$)");
  if (std::regex_search(kernel, m, name)) return Tiles{std::stoll(m[1]), std::stoll(m[2])};
  return std::nullopt;
}

bool is_cudnn_forward(const std::string& kernel) {
  return kernel.rfind("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", 0) == 0;
}

// flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel: Flash_bwd_kernel_traits<head dim;kBlockM;kBlockN;kNWarps;
// AtomLayoutMSdP;AtomLayoutNdKV;AtomLayoutMdQ;...>. Its products lay the warps out in two dimensions:
// S and dP AtomLayoutMSdP along the query rows, dK and dV AtomLayoutNdKV along the key rows, dQ AtomLayoutMdQ
// along the query rows, the rest of the kNWarps along the columns: bands of kBlockM / AtomLayoutMSdP rows
// (32 in both kernels here, and so are kBlockN / AtomLayoutNdKV and kBlockM / AtomLayoutMdQ).
std::optional<Tiles> backward_tiles(const std::string& kernel, const std::string& kernel_template) {
  std::smatch m;
  static const std::regex flash(
      R"(Flash_bwd_kernel_traits<(\d{1,6});(\d{1,6});(\d{1,6});(\d{1,3});(\d{1,3});(\d{1,3});(\d{1,3});)");
  if (kernel != "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel" ||
      !std::regex_search(kernel_template, m, flash))
    return std::nullopt;
  const int64_t block_m = std::stoll(m[2]), block_n = std::stoll(m[3]), layout_sdp = std::stoll(m[5]);
  const int64_t rows = layout_sdp > 0 ? block_m / layout_sdp : 0;
  const bool uniform = rows > 0 && std::stoll(m[6]) > 0 && block_n / std::stoll(m[6]) == rows &&
                       std::stoll(m[7]) > 0 && block_m / std::stoll(m[7]) == rows;
  return Tiles{block_m, block_n, uniform ? std::stoll(m[4]) : 0, uniform ? rows : 0};
}

// Bytes each block of flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel stores beyond dK_j, dV_j and its dQaccum
// atomics. The source stores nothing else; the kernel runs at 255 registers per thread, so these are most
// likely register spills to local memory, a property of the compiled kernel that the source does not give.
// Taken from one measured row per kernel variant (h100_sdpa.csv, 1x16x4096x64 and 8x32x2048x128:
// (l1_write_bytes - |dK| - |dV| - atomics) / grid); the other rows of each variant (4x16x4096x64,
// 1x16x16384x64; 1x16x8192x128, 1x8x32768x128) show the same bytes per block, to the byte.
struct Spill {
  const char* traits;
  bool causal;
  int64_t bytes_per_block;
};
constexpr Spill kBackwardSpills[] = {
    {"Flash_bwd_kernel_traits<64;128;128;8;4;4;4;0;0;", false, 19456},
    {"Flash_bwd_kernel_traits<64;128;128;8;4;4;4;0;0;", true, 12288},
    {"Flash_bwd_kernel_traits<128;64;128;8;2;4;2;0;0;", false, 2048},
    {"Flash_bwd_kernel_traits<128;64;128;8;2;4;2;0;0;", true, 3072},
};

int64_t backward_spill_bytes(const std::string& kernel_template, bool causal) {
  for (const Spill& s : kBackwardSpills)
    if (s.causal == causal && kernel_template.find(s.traits) != std::string::npos) return s.bytes_per_block;
  return 0;
}

// flash_fwd_kernel's stores beyond O and its f32 log-sum-exp per row: a fixed number of bytes per key block
// and per block, the same to the byte on every row of a kernel variant. Its source stores nothing else in
// its loop; it runs at 255 registers per thread, so these are register spills to local memory (which
// reach L2: Nsight Compute counts them in l1tex__m_l1tex2xbar_write_bytes). Per key block from the two
// non-causal rows of each head dimension at different n (h100_sdpa_cases.csv: 1x16x4096x64 and
// 1x16x16384x64; 8x32x2048x128 and 1x16x8192x128); per block, which takes the masking steps' extra
// spills too, from one row per variant (those rows and 1x16x4096x64 causal, 8x32x2048x128 causal). The
// other rows are predictions: 4x16x4096x64 and 1x8x32768x128 exact, the causal ones within 60 bytes a
// block.
struct ForwardSpill {
  const char* traits;
  bool causal;
  int64_t bytes_per_key_block, bytes_per_block;
};
constexpr ForwardSpill kForwardSpills[] = {
    {"Flash_fwd_kernel_traits<64;128;128;4;", false, 3072, 11264},
    {"Flash_fwd_kernel_traits<64;128;128;4;", true, 3072, 13280},
    {"Flash_fwd_kernel_traits<128;128;64;4;", false, 7168, 7168},
    {"Flash_fwd_kernel_traits<128;128;64;4;", true, 7168, 8128},
};

const ForwardSpill* forward_spill(const std::string& kernel_template, bool causal) {
  for (const ForwardSpill& s : kForwardSpills)
    if (s.causal == causal && kernel_template.find(s.traits) != std::string::npos) return &s;
  return nullptr;
}

// cuDNN's backward (cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x{d}_...):
// persistent like its forward (grid = SM count, 384 threads: a producer warp group and two consumers),
// after compute_dot_do_o_specialized (D) and before convert_dq_to_16bits (dQ from the f32 accumulator), the
// three kernels flash-attn's backward also launches.
bool is_cudnn_backward(const std::string& kernel) {
  return kernel.rfind("cudnn_generated_fort_native_sdpa_sm90_flash_bprop", 0) == 0;
}

// PyTorch's memory-efficient backward, fmha_cutlassB_<dtype>_aligned_<I>x<J>_k<kMaxK>[_seqaligned]_sm80
// (CUTLASS's AttentionBackwardKernel): I query rows and J keys per step, I x J / 1024 warps each on a 32 x 32
// tile of every product (its default warp shape), and kMaxK, which decides whether K_j stays in SRAM for S:
// only when its pipeline stages, min(3, ceil(kMaxK / 32)) of 32 columns, hold all of it.
struct MemEfficientBackward {
  Tiles tiles;
  bool reload_k = false;
};

std::optional<MemEfficientBackward> mem_efficient_backward(const std::string& kernel) {
  std::smatch m;
  static const std::regex name(
      R"(^fmha_cutlassB_\w+?_aligned_(\d{1,6})x(\d{1,6})_k(\d{1,6})(_seqaligned)?_sm80$)");
  if (!std::regex_search(kernel, m, name)) return std::nullopt;
  const int64_t i = std::stoll(m[1]), j = std::stoll(m[2]), max_k = std::stoll(m[3]);
  const int64_t stages = std::min<int64_t>(3, (max_k + 31) / 32);
  return MemEfficientBackward{{i, j, i * j / 1024, 32}, max_k > 32 * stages};
}

// Why a forward kernel has no schedule yet.
std::string unmapped_reason(const std::string& kernel) {
  if (kernel.rfind("fmha_cutlassF", 0) == 0)
    return "memory-efficient kernel " + kernel + ": its name gives no <queries>x<keys> tiles";
  if (kernel.rfind("cudnn", 0) == 0) return "cuDNN kernel " + kernel + " has no schedule";
  return "kernel " + kernel + " has no schedule";
}

// Why a backward kernel has no schedule yet.
std::string unmapped_backward_reason(const std::string& kernel) {
  if (kernel.rfind("fmha_cutlassB", 0) == 0)
    return "memory-efficient backward kernel " + kernel + ": its name gives no <queries>x<keys> tiles";
  if (kernel.rfind("cudnn", 0) == 0) return "cuDNN kernel " + kernel + " has no schedule";
  return "kernel " + kernel + " has no schedule";
}

// cuDNN's backward as flash2-bwd with flash-attn's kernels: its SM<-L2 reads are those of 128-row key tiles
// (K_j, V_j once; Q_i, dO_i, L_i, D_i once per key block: 68.01 x |Q| measured at 1x16x4096x64, 68.00 x
// simulated), so a work tile is 128 keys, which the name's 64 x 64 makes two consumer warp groups of 64 keys
// each stepping through 64 query rows. Its tile order is not documented: handed out as SMs free up, as its
// forward's (one block per SM, the measured occupancy). Its writes beyond dK, dV, D and the dQ atomics are
// not explained (dot(dO, O) writes 2.2-2.6 x |Q| where D and the zeroed f32 dQ accumulator are 2.03-2.06 x,
// the dQ conversion 1.55-1.64 x |dQ|, the main kernel 1-2% more): nothing is added for them.
Measurement cudnn_backward_measurement(Measurement m) {
  m.schedule = "flash2-bwd";
  m.block_q = 64;
  m.block_k = 128;
  m.as_flash_attn = true;
  m.dynamic_tiles = true;
  m.double_buffer = true;  // the producer warp group loads the next Q_i, dO_i while the consumers work
  m.wgmma = true;
  m.ping_pong = true;  // BackwardShape::warp_groups: a producer warp group and two consumers
  return m;
}

// Bytes the memory-efficient backward's blocks spill to local memory that reach L2. The 128 x 128 kernel
// runs 512 threads at 128 registers each, which its dK_j and dV_j accumulators alone fill (kOutputInRF).
// Measured per kernel (validation/data/h100_memeff_bwd_local_raw.csv, validation/run_memeff_bwd_local.sh:
// Nsight Compute's L1 sectors of local memory on the six d = 128 rows): every local store reaches L2, 38,912
// bytes a step and 38,912 a block (19 registers of 512 threads), exact on all six rows; of the local loads
// (about 136 KB a step) the L1 serves most, and what misses it, 0.77-1.48 of any two-term fit, is taken
// here as the least-squares fit over the six, 20,576 a step and 35,104 a block (to 32-byte sectors;
// 0.90-1.09 of each row's). The 64 x 64 kernel (162 registers) spills nothing. The thread's local memory is
// its stack frame, 136 bytes in PyTorch's sm_90 build (cuobjdump -res-usage, validation/data/
// h200_memeff_stack.txt), more than the spills of one step: after the kernel an H200's L2 holds the whole
// frame of every slot that ran a block (4.1 of 4.4 MiB at 1 x 1 x 8192, validation/data/
// h200_memeff_residency.csv), so the block's row of `local` is the frame.
struct MemEfficientSpill {
  const char* kernel;
  int64_t store_per_step, store_per_block, load_per_step, load_per_block, frame_per_thread;
};
constexpr MemEfficientSpill kMemEfficientSpills[] = {
    {"fmha_cutlassB_f16_aligned_128x128_k128_seqaligned_sm80", 38912, 38912, 20576, 35104, 136},
};

// The memory-efficient backward as flash2-bwd's as_mem_efficient program: its one attention kernel, grid
// (key blocks, heads), the measured occupancy. PyTorch's launches before it (the fill that zeroes the f32 dQ
// workspace, an element-wise copy of dO) are not attention kernels: the measured bytes and time leave them
// out, and the program starts from the zeroed workspace.
Measurement mem_efficient_backward_measurement(Measurement m, const MemEfficientBackward& kernel,
                                               const std::string& name, int64_t heads_per_batch) {
  m.schedule = "flash2-bwd";
  m.block_q = kernel.tiles.block_q;
  m.block_k = kernel.tiles.block_k;
  m.warps = kernel.tiles.warps;
  m.warp_rows = kernel.tiles.warp_rows;
  m.as_mem_efficient = true;
  // CUTLASS's mainloops step through k a tile of 32 at a time in a loop: in the kernel's SASS each HMMA
  // runs 4 times a step at d = 128, beside 20 BAR and 20 BRA a warp and step (validation/data/
  // h200_memeff_profile.tar.gz; 876 other instructions a warp and step inside those loops, 21.9 a k-step of
  // 16, where the presets' rolled_kstep_instructions, measured on the project's kernels, count 12).
  m.rolled_k_loops = true;
  m.mma = kMemEfficientMma;
  // It computes P as expf(s * scale - lse) (CUTLASS's B2bGemm::accumApplyLSEToSmem): in its SASS, per score a
  // thread holds, FFMA.SAT, FFMA.RM, FADD, two FFMA, SHF.L, MUFU.EX2 and FMUL, and the scale's own FMUL (at 1
  // x 16 x 8,192 x 128, 32 scores a thread and step: 32 MUFU.EX2, 32 FFMA.SAT, 32 FFMA.RM, 64 FFMA, 64 FMUL;
  // h200_memeff_profile.tar.gz).
  m.accurate_exp = true;
  m.reload_k = kernel.reload_k;
  // O (the forward's output), the copy of dO the backward makes and the gradients are (b, n, h, d): one
  // query row of every head of a batch together (validation/data/h200_memeff_residency.csv found them so).
  m.heads_inner_outputs = heads_per_batch;
  for (const MemEfficientSpill& spill : kMemEfficientSpills)
    if (name == spill.kernel) {
      m.spill_bytes_per_step = spill.store_per_step;
      m.spill_bytes_per_block = spill.store_per_block;
      m.spill_load_bytes_per_step = spill.load_per_step;
      m.spill_load_bytes_per_block = spill.load_per_block;
      m.spill_frame_bytes = spill.frame_per_thread * 32 * kernel.tiles.warps;
    }
  return m;
}

// A backward row: FlashAttention-2's three kernels (dot(dO, O) with dQaccum zeroed, dK/dV with dQaccum
// atomics, dQ conversion) as flash2-bwd with flash-attn's tiles and launches; cuDNN's and the
// memory-efficient kernel as above; the rest with the reason.
Measurement backward_measurement(const CsvRow& row, Measurement m) {
  const std::string kernel = row.text("main_kernel");
  const std::string kernel_template = row.text("main_kernel_template");
  if (is_cudnn_backward(kernel)) return cudnn_backward_measurement(m);
  if (auto mem_efficient = mem_efficient_backward(kernel))
    return mem_efficient_backward_measurement(m, *mem_efficient, kernel, row.size("heads"));
  auto tiles = backward_tiles(kernel, kernel_template);
  if (!tiles) {
    m.not_simulated = unmapped_backward_reason(kernel);
    return m;
  }
  m.schedule = "flash2-bwd";
  m.block_q = tiles->block_q;
  m.block_k = tiles->block_k;
  m.warps = tiles->warps;
  m.warp_rows = tiles->warp_rows;
  m.as_flash_attn = true;
  m.overhead = kFlashAttention2Overhead;
  m.double_buffer = true;  // its dK/dV blocks load the next Q, dO before this step's dQ atomics
  m.spill_bytes_per_block = backward_spill_bytes(kernel_template, m.causal);
  return m;
}

// The SM clock during the pass's attention kernels: Nsight Compute's GPC cycles (gpc__cycles_elapsed.max,
// summed over them) over their time. The SMs run in the GPC's clock domain: on the profiled tensor-core
// kernels (validation/data/h100_tc_profile.tar.gz) that ratio and sm__cycles_elapsed.avg.per_second agree
// within 5%. Rounded to 1 MHz, far below that agreement: the DRAM model's time base needs a clock and a
// bandwidth with common factors. 0 (the config's base clock) where the column is missing or empty.
double attention_clock_ghz(const CsvRow& row, double time_ns) {
  if (!row.has("attn_cycles_elapsed") || row.text("attn_cycles_elapsed").empty() || !(time_ns > 0)) return 0;
  const double ghz = std::round(row.number("attn_cycles_elapsed") / time_ns * 1000) / 1000;
  if (!(ghz > 0.01 && ghz < 10))
    row.fail(fmt::format("columns attn_cycles_elapsed / attn_time_ns: {:.4g} GHz is not an SM clock", ghz));
  return ghz;
}

}  // namespace

std::vector<std::string> sdpa_columns() {
  return {"gpu",
          "backend",
          "batch",
          "heads",
          "n",
          "d",
          "causal",
          "dtype",
          "status",
          "pass",
          "main_kernel",
          "main_kernel_template",
          "main_grid_size",
          "attn_time_ns",
          "attn_l1_read_bytes",
          "attn_l1_write_bytes",
          "attn_dram_read_bytes",
          "attn_dram_write_bytes",
          "err_o_maxrel"};
}

Measurement sdpa_measurement(const CsvRow& row) {
  Measurement m;
  m.line = row.line;
  m.gpu = row.text("gpu");
  m.label = row.text("backend") + " " + row.text("pass") + " " + row.text("batch") + "x" + row.text("heads");
  if (row.text("status") != "measured") {
    m.not_simulated = "not measured (" + row.text("status") + ")";
    return m;
  }
  m.schedule = "flash2";
  m.dtype = row.text("dtype");
  m.n = row.size("n");
  m.d = row.size("d");
  m.heads = row.size("batch") * row.size("heads");
  m.causal = row.number("causal") != 0;
  m.time_ns = row.number("attn_time_ns");
  // A DRAM-only sweep (run_dram_sweep.sh METRICS_SET=dram) leaves both SM <-> L2 cells empty.
  m.sm_l2_measured = !row.text("attn_l1_read_bytes").empty() || !row.text("attn_l1_write_bytes").empty();
  if (m.sm_l2_measured) {
    m.l1_read_bytes = row.number("attn_l1_read_bytes");
    m.l1_write_bytes = row.number("attn_l1_write_bytes");
  }
  m.dram_read_bytes = row.number("attn_dram_read_bytes");
  m.dram_write_bytes = row.number("attn_dram_write_bytes");
  read_l2_counters(row, "attn_", m);
  m.max_rel_error = row.number("err_o_maxrel");
  if (row.has("main_sm_count") && !row.text("main_sm_count").empty()) m.sm_count = row.size("main_sm_count");
  if (row.has("core_partitions")) m.core_partitions = row.text("core_partitions");
  m.sm_clock_ghz = attention_clock_ghz(row, m.time_ns);
  if (row.text("pass") != "fwd") return backward_measurement(row, m);
  // Every forward kernel here keeps S, P and the O accumulator in registers (the backward's program does
  // the same with as_flash_attn).
  m.accumulators_in_registers = true;
  if (is_cudnn_forward(row.text("main_kernel"))) {
    // Its tile order is not documented. A static round robin (ForwardShape::persistent_blocks) lets the 132
    // resident tiles drift apart on causal rows and fetch K, V again (1.8 to 27 times the measured DRAM
    // reads); work tiles handed to whichever block finishes first keep them together, as measured. That is
    // an ordinary grid at one block per SM (the measured occupancy), handed out as SMs free up; key blocks
    // ascending.
    m.block_q = 128;
    m.block_k = m.d > 64 ? 64 : 128;
    m.dynamic_tiles = true;
    m.store_row_statistic = true;  // the log-sum-exp the backward needs, f32 per row, with O
    // 384 threads: a producer warp group loads while two consumer warp groups, each on half of the 128
    // rows, take turns at the tensor cores, one's softmax running during the other's products.
    m.ping_pong = true;
    m.double_buffer = true;  // the producer loads the next K, V while the consumers work
    m.wgmma = true;          // "wgmma" in its name: Hopper's warp-group matrix multiply
    return m;
  }
  if (auto tiles = mem_efficient_tiles(row.text("main_kernel"))) {
    m.block_q = tiles->block_q;
    m.block_k = tiles->block_k;
    m.as_mem_efficient = true;
    m.mma = kMemEfficientMma;
    m.iterative_softmax = true;  // xformers' iterative_softmax, which CUTLASS's forward kernel runs
    m.heads_inner_outputs = row.size("heads");  // O is (b, n, h, d), as the backward's tensors
    m.store_row_statistic = true;
    m.spill_bytes_per_block = tiles->block_q == 64 && tiles->block_k == 64 ? 512 : 0;
    return m;
  }
  auto tiles = forward_tiles(row.text("main_kernel"), row.text("main_kernel_template"));
  if (!tiles) {
    m.not_simulated = unmapped_reason(row.text("main_kernel"));
    return m;
  }
  m.block_q = tiles->block_q;
  m.block_k = tiles->block_k;
  m.warps = tiles->warps;
  m.warp_rows = tiles->warp_rows;
  m.keys_descending = true;  // flash_fwd_kernel: "we iterate over the blocks in reverse order"
  m.overhead = kFlashAttention2Overhead;
  m.store_row_statistic = true;  // softmax_lse, f32 per row, which the backward reads
  if (const ForwardSpill* spill = forward_spill(row.text("main_kernel_template"), m.causal)) {
    m.spill_bytes_per_key_block = spill->bytes_per_key_block;
    m.spill_bytes_per_block = spill->bytes_per_block;
  }
  return m;
}

}  // namespace attnsim
