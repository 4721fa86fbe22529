// `attnsim validate`: holds the simulator's predictions against measurements of the same schedules on a
// real GPU (validation/data/*.csv, written by validation/run_on_device.sh). The simulator has no L2, so its
// "off-chip" bytes are compared with the traffic between the SMs and L2 (Nsight Compute's l1tex xbar
// bytes); DRAM bytes are reported beside them because L2 reuse hides part of the traffic from DRAM.
#pragma once

#include <array>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "chip/chip.h"
#include "isa/code_overhead.h"

namespace attnsim {

struct Measurement {
  std::string gpu, schedule, dtype;
  std::string label;          // how the row is printed, when not by its schedule (e.g. a PyTorch backend)
  std::string not_simulated;  // set: the row is listed with this reason and not simulated
  // The project's kernel variant (column `kernel`, default ffma): ffma multiplies on the CUDA cores, tc on
  // the tensor cores (validation/kernels_tc.cu), whose time the MXU model can be held against.
  std::string kernel = "ffma";
  int64_t n = 0, d = 0, heads = 0, block_q = 0, block_k = 0;
  bool causal = false;
  double time_ns = 0;
  double l1_read_bytes = 0, l1_write_bytes = 0;
  double dram_read_bytes = 0, dram_write_bytes = 0;
  // Whether the SM <-> L2 columns were measured: a DRAM-only sweep (run_dram_sweep.sh METRICS_SET=dram, one
  // ncu pass) leaves them empty, and its rows are held against DRAM bytes and time only.
  bool sm_l2_measured = true;
  int repeats = 1;                     // merge_repeats: the files whose rows of this case it stands for
  double l2_lookup_miss_sectors = -1;  // Nsight Compute's lts__t_sectors_srcunit_tex_lookup_miss (-1: none)
  double l2_fabric_sectors = -1;       // lts__t_sectors_srcunit_ltcfabric: sectors between the partitions
  double l2_home_miss_sectors = -1;    // lts__t_sectors_lookup_miss less its srcunit_tex part (-1: none)
  double max_rel_error = 0;
  // Resident blocks per SM of each launch (the smallest of Nsight Compute's occupancy limits: shared memory,
  // registers, warps, blocks), when the CSV has them; one value applies to every launch.
  std::vector<int64_t> blocks_per_sm;
  bool keys_descending = false;  // the kernel walks key blocks from the diagonal down (FlashAttention-2's)
  // Backward schedules (flash2-bwd): flash-attn's own launches; both directions: the bytes each block stores
  // beyond its tiles (traces/attention_backward.h, BackwardShape; attention_forward.h, ForwardShape).
  bool as_flash_attn = false;
  int64_t spill_bytes_per_block = 0;
  int64_t spill_bytes_per_key_block = 0;  // forward flash2 (ForwardShape)
  int64_t sm_count = 0;  // the GPU's SMs (column main_sm_count), when the CSV has it: spill rows are per slot
  // The L2 partition of each SM the launch ran on, in the order CUDA hands them blocks (column
  // core_partitions of validation/run_memeff_sms.sh's rows: the pair probe's attachment of those SMs), when
  // the CSV has it; validate runs the presets' attachment unless given -p l2.core_partitions=this.
  std::string core_partitions;
  // Forward flash2: whether the kernel stores a row statistic with O (traces/attention_forward.h,
  // ForwardShape).
  // A persistent kernel whose work tiles go to blocks as they finish (a dynamic tile scheduler): simulated
  // as the ordinary grid at the measured one block per SM, which the block scheduler hands out the same way.
  bool dynamic_tiles = false;
  bool store_row_statistic = false;
  // flash2 or flash2-bwd as PyTorch's memory-efficient kernels load (ForwardShape, BackwardShape); the
  // backward's K_j reloaded for S every step (BackwardShape::reload_k).
  bool as_mem_efficient = false;
  bool reload_k = false;
  // flash2-bwd as_mem_efficient: spill bytes per step (stored, loaded) and loaded per block (BackwardShape).
  int64_t spill_bytes_per_step = 0, spill_load_bytes_per_step = 0, spill_load_bytes_per_block = 0;
  int64_t spill_frame_bytes = 0;  // the block's local memory (stack frame x threads), BackwardShape
  // as_mem_efficient: O (and the backward's dO and gradients) as (batch, n, heads, d) with this many heads a
  // batch, as PyTorch allocates them for these kernels (heads_inner_outputs of ForwardShape and
  // BackwardShape); 0: head after head.
  int64_t heads_inner_outputs = 0;
  // The kernel loads the next tile while it computes on the current one (cp.async double buffering), so the
  // simulated program prefetches too (AttentionShape::double_buffer): forward schedules and flash2-bwd.
  bool double_buffer = false;
  // flash2 and two-pass: S, P, O_i and the row statistics in registers, as the tensor-core kernels keep them
  // (ForwardShape::accumulators_in_registers).
  bool accumulators_in_registers = false;
  bool q_in_registers = false;  // ForwardShape::q_in_registers: the project's flash2 and two-pass kernels
  // How the main kernel's warps share a product (AttentionShape::warps): PyTorch's FlashAttention-2
  // kernels, from their templates; 0: the default (the project's kernels).
  int64_t warps = 0, warp_rows = 0;
  bool rolled_k_loops = false;  // BackwardShape::rolled_k_loops: the project's backward kernels
  // The main kernel's mma instruction shape (AttentionShape::mma; 0: the machine's) and whether its softmax
  // is CUTLASS's iterative one (ForwardShape::iterative_softmax): PyTorch's memory-efficient kernels.
  std::array<int64_t, 3> mma{0, 0, 0};
  bool iterative_softmax = false;
  bool accurate_exp = false;  // BackwardShape::accurate_exp: PyTorch's memory-efficient backward
  // What the main kernel's code spends beside its tile instructions (AttentionShape::overhead): PyTorch's
  // FlashAttention-2 kernels (sim/sdpa_cases.cpp); unset: the machine's.
  isa::CodeOverhead overhead{};
  // The kernel's two consumer warp groups take turns at the tensor cores: ForwardShape::ping_pong for a
  // forward row, BackwardShape::warp_groups for a backward one (cuDNN's).
  bool ping_pong = false;
  // The kernel multiplies with Hopper's wgmma, not mma.sync: the MXU is fed by rows, passes streamed
  // (MxuUnit::Feed{cell hand-off, dealt by M}) for its row.
  bool wgmma = false;
  int line = 0;               // in the CSV, for errors
  std::string path;           // the CSV it came from (several may be validated together)
  std::string clock_control;  // Nsight Compute's --clock-control of the row ("base", "none"), if given
  // The SM clock Nsight Compute measured while the row's kernels ran (sm__cycles_elapsed.avg.per_second,
  // time-weighted over its launches); 0 when the CSV has none. Under heavy tensor-core load it is below
  // the locked base clock, and the row is simulated at it.
  double sm_clock_ghz = 0;
  // Each launch's gpu__time_duration and SM clock, in launch order (columns kernel_times_ns and
  // kernel_clocks_ghz); empty when the CSV has none.
  std::vector<double> kernel_times_ns, kernel_clocks_ghz;
  // Each launch's measured SM cycles (time x its own clock), to hold against the simulated cycles of that
  // launch; empty without the columns above.
  std::vector<double> kernel_cycles() const;
};

// Reads the CSV (header row naming the columns); throws InputError naming the file and line.
std::vector<Measurement> read_measurements(const std::string& path);

// The L2's optional counters of a measurements row (Nsight Compute's lookup misses, fabric sectors, all
// misses), from columns named prefix + lts_tex_miss_sectors, lts_fabric_sectors, lts_miss_sectors.
struct CsvRow;
void read_l2_counters(const CsvRow& row, const std::string& prefix, Measurement& m);

struct ValidationRow {
  Measurement measured;
  double predicted_read = 0, predicted_write = 0;  // simulator HBM bytes (sector-rounded)
  uint64_t predicted_cycles = 0;
  double predicted_ns = 0;             // predicted_cycles at clock_ghz
  double clock_ghz = 0;                // the config's clock_base_ghz for rows measured at base clocks
  double predicted_dram_read = -1;     // whole-chip configs only: DRAM read bytes (sector-rounded)
  double predicted_dram_written = -1;  // whole-chip configs only: evicted while kernels ran
  double predicted_l2_lookup_read_miss_sectors = -1;  // whole-chip configs with an L2
  double predicted_l2_fabric_sectors = -1;            // whole-chip configs with an L2
  double predicted_l2_home_miss_sectors = -1;         // whole-chip configs with an L2
  // Whole-chip configs: DRAM bytes per tensor (which tensors miss the L2), and the SM <-> L2 reads.
  std::map<std::string, uint64_t> predicted_dram_read_by_tensor, predicted_dram_written_by_tensor;
  std::map<std::string, uint64_t> predicted_l2_resident_by_tensor;  // valid in L2 when the kernels ended
  std::map<std::string, uint64_t> predicted_read_by_tensor;
  double predicted_warp_instructions = -1;  // whole-chip configs with an issue: section, all cores
  double predicted_ldmatrix = -1;           // among them, the products' ldmatrix
  // Whole-chip configs: each launch's name in the program and its cycles (its fixed launch cost included).
  std::vector<std::string> predicted_kernel_names;
  std::vector<int64_t> predicted_kernel_cycles;
  std::vector<uint64_t> predicted_kernel_warp_instructions;
  std::map<std::string, uint64_t>
      predicted_warp_instructions_by_op;  // all kernels, by tile opcode  // each kernel's, whole chip (with
                                          // an issue: section)
  std::vector<BlockRecord> blocks;        // whole-chip configs, when validate was asked to record them
  // validate with hot_part_bytes: the share of the hot buffer (read by every core just before the row's
  // kernels) that had to come from DRAM again when read just after them (-1: not asked).
  double predicted_hot_part_lost = -1;
  // Run at several placements (ValidationSummary::placement_addresses): each run's DRAM reads, in that
  // order; the row's other figures are those of the run with the median DRAM reads.
  std::vector<double> predicted_dram_read_by_placement;
};

struct ValidationSummary {
  std::vector<ValidationRow> rows;
  double read_nrmse = 0, write_nrmse = 0;  // RMSE / mean of the measured values
  double read_pearson = 0, write_pearson = 0;
  bool chip = false;  // DRAM figures below are set for whole-chip configs
  std::vector<Measurement> not_simulated;
  std::string timeline_json, timeline_note;  // with a TimelineRequest: the row's timeline, where it stopped
  double dram_read_nrmse = 0, dram_read_pearson = 0;
  double dram_write_nrmse = 0, dram_write_pearson = 0;
  double clock_ghz = 0;            // the config's clock, which turns predicted cycles into time
  double clock_base_ghz = 0;       // the config's clock under --clock-control base (0: not given)
  size_t base_clock_rows = 0;      // rows measured at base clocks and converted with clock_base_ghz
  size_t measured_clock_rows = 0;  // rows simulated at their own measured SM clock (sm_clock_ghz)
  // Kernel time, predicted / measured, over the rows with a measured time.
  double time_mape = 0, time_pearson = 0;
  size_t timed_rows = 0;
  size_t sm_l2_rows = 0;  // rows whose SM <-> L2 bytes were measured (the SM <-> L2 figures are over them)
  std::vector<uint64_t> placement_addresses;  // every row's placements (empty: each row ran once)
};

// Throws InputError naming the row's CSV (`data_path` when the row has none) and line for a measurement
// the simulator cannot run.
// `overrides` (key=value) apply after the validation's own (noc.atomics=l2 on a chip).
// `record_blocks`: keep when and on which core each thread block ran (ValidationRow::blocks).
// hot_part_bytes > 0: each row's kernels run between two reads of a buffer of that many bytes by every core,
// the L2 kept between kernels (traces/hot_part.h; the GPU's twin is validation/memeff_room_probe.py); the
// rows' DRAM figures then include the buffer's reads.
// `timeline`: the one row's instructions on a whole chip as a Perfetto / Chrome JSON (sim/chip_timeline.h),
// into ValidationSummary::timeline_json; refused (InputError) with more than one row.
struct TimelineRequest {
  std::string cores = "all";  // the cores shown: all, or a list such as 0-3,17
  size_t limit = 200000;      // instructions kept
};
// Rows of the same case from several files (sweeps of the same rows with the tensors elsewhere:
// run_sdpa_placements.sh) as one row each, in the order first seen: its measured DRAM bytes and time the
// median over the files (the mean of the middle two for an even count), its SM <-> L2 bytes too where every
// file measured them, the rest the first file's. A placement is one draw; the median is what the model's
// median over --placements is held against. Rows not simulated stay as they are.
std::vector<Measurement> merge_repeats(const std::vector<Measurement>& rows);
// A DRAM-only sweep (one ncu pass: DRAM bytes and time) does not measure the SM clock, and its rows would be
// simulated at the config's clock_base_ghz, where the same kernels ran at their own (H200 attention kernels
// under --clock-control base: 1.35 GHz, not 1.5). Each row without a clock takes its case's from `from`
// (another sweep of the same cases that measured it); returns how many did.
size_t take_clocks(std::vector<Measurement>& rows, const std::vector<Measurement>& from);

struct ValidateOptions {
  std::vector<std::string> overrides;
  bool record_blocks = false;
  uint64_t hot_part_bytes = 0;
  const TimelineRequest* timeline = nullptr;
  // Whole chip: each row runs once per offset, its tensors laid out from the config's
  // hbm.first_tensor_address plus that many bytes; the row's figures are those of the run whose DRAM reads
  // are the median (the lower middle one for an even count). A GPU's allocator and its virtual-to-physical
  // mapping place a kernel's tensors anywhere, and the L2's set and partition hashes see the physical
  // addresses: one placement is one draw (docs/validation.md, "The model moves with the placement as much
  // as the GPU does"). Empty: once, as configured. Refused (InputError) with a timeline.
  std::vector<uint64_t> placement_offsets;
};
ValidationSummary validate(const std::string& config_path, const std::string& data_path,
                           const std::vector<Measurement>& measurements, const ValidateOptions& options);
inline ValidationSummary validate(const std::string& config_path, const std::string& data_path,
                                  const std::vector<Measurement>& measurements,
                                  const std::vector<std::string>& overrides = {}, bool record_blocks = false,
                                  uint64_t hot_part_bytes = 0, const TimelineRequest* timeline = nullptr) {
  return validate(config_path, data_path, measurements,
                  ValidateOptions{overrides, record_blocks, hot_part_bytes, timeline, {}});
}
void print_validation(std::ostream& out, const ValidationSummary& summary);
// Simulated / measured cycles of each kernel of the multi-kernel rows whose data give each launch's time
// and clock, grouped by schedule and kernel name; "" when there are none. print_validation ends with it.
std::string kernel_breakdown(const ValidationSummary& summary);
// One line per simulated row (its file and line, the configuration, predicted and measured bytes at each
// level and time, their ratios), then the unsimulated rows with their reason: for plots and analysis.
std::string validation_csv(const ValidationSummary& summary);
// One line per thread block of every simulated row that recorded them: the row's file and line, its label,
// the kernel launch, blockIdx, core, start and end (cycles, and microseconds at the row's clock), as the
// harness's TIMES files give them for the GPU.
std::string validation_block_times_csv(const ValidationSummary& summary);

// The summary's error figures, for tests that gather rows from several processes: RMSE over the mean of the
// measured values, mean absolute percentage error (a fraction), Pearson's r.
double nrmse(const std::vector<double>& predicted, const std::vector<double>& measured);
double mape(const std::vector<double>& predicted, const std::vector<double>& measured);
double pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace attnsim
