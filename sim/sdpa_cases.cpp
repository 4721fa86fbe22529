#include "sim/sdpa_cases.h"

#include <regex>

namespace attnsim {

namespace {

struct Tiles {
  int64_t block_q = 0, block_k = 0;
};

// flash_fwd_kernel: Flash_fwd_kernel_traits<head dim;kBlockM;kBlockN;warps;...>.
std::optional<Tiles> forward_tiles(const std::string& kernel, const std::string& kernel_template) {
  std::smatch m;
  static const std::regex flash(R"(Flash_fwd_kernel_traits<(\d+);(\d+);(\d+);)");
  if (kernel == "flash_fwd_kernel" && std::regex_search(kernel_template, m, flash))
    return Tiles{std::stoll(m[2]), std::stoll(m[3])};
  return std::nullopt;
}

// Why a forward kernel has no schedule yet.
std::string unmapped_reason(const std::string& kernel) {
  if (kernel.rfind("fmha_cutlassF", 0) == 0)
    return "the memory-efficient kernel reads 1.2x to 1.5x the SM<->L2 bytes of flash2 at its tiles (its "
           "loop "
           "structure is not modelled)";
  if (kernel.rfind("cudnn", 0) == 0) return "cuDNN's persistent kernel (grid = SM count) is not modelled";
  return "kernel " + kernel + " has no schedule";
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
  m.l1_read_bytes = row.number("attn_l1_read_bytes");
  m.l1_write_bytes = row.number("attn_l1_write_bytes");
  m.dram_read_bytes = row.number("attn_dram_read_bytes");
  m.dram_write_bytes = row.number("attn_dram_write_bytes");
  m.max_rel_error = row.number("err_o_maxrel");
  if (row.text("pass") != "fwd") {
    m.not_simulated = "backward kernels are not mapped to a schedule yet";
    return m;
  }
  auto tiles = forward_tiles(row.text("main_kernel"), row.text("main_kernel_template"));
  if (!tiles) {
    m.not_simulated = unmapped_reason(row.text("main_kernel"));
    return m;
  }
  m.block_q = tiles->block_q;
  m.block_k = tiles->block_k;
  m.keys_descending = true;  // flash_fwd_kernel: "we iterate over the blocks in reverse order"
  return m;
}

}  // namespace attnsim
