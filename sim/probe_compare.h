// Measured runs of the L2 probe (validation/l2_probe.cu, validation/run_l2_probe.sh: one row per launch in
// validation/data/<gpu>_l2_probe*.csv) against the model: `attnsim probe -c CONFIG --measured FILE`
// simulates every row's probe on the config's whole chip and prints predicted over measured DRAM bytes and L2
// partition counters, row by row.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "traces/l2_probe.h"

namespace attnsim {

class Machine;

struct MeasuredProbe {
  traces::ProbeShape shape;
  int line = 0;  // in the file, for messages
  double dram_read = 0, dram_written = 0;
  // lts__t_sectors_srcunit_tex_lookup_miss, lts__t_sectors_srcunit_ltcfabric and gpu__time_duration, where
  // the file has them
  std::optional<double> lookup_misses, fabric, time_ns;
  // Share of the read sectors the SMs asked for that the L2's request coalescer merged (1 -
  // lrc__lts2lrc_sectors_op_read / lrc__xbar2gpc_sectors_op_read), where the file has both
  std::optional<double> coalesced_share;
  std::optional<uint64_t> offset_bytes;  // where the buffer began in its allocation (SET=offsets, pages)
  int64_t sms = 0;                       // the SMs of a green context it ran in; 0: every SM
};

// The rows of a probe file (header `mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,...`). The
// mode cell names the probe, with its second shape for heads (heads:HEADS:HEAD_BYTES), copies
// (copies:COPIES:STRIDE_BYTES; bytes: all copies) and stale, wbetween, rbetween (MODE:HOT_BYTES:HOT_PASSES).
// Throws InputError (file:line:col) for a bad cell, and for pair probes (which time two SMs, not bytes).
std::vector<MeasuredProbe> read_measured_probes(const std::string& path);

struct ProbeComparison {
  MeasuredProbe measured;
  double dram_read = 0, dram_written = 0;  // predicted, whole chip, bytes
  double lookup_misses = 0, fabric = 0;    // predicted sectors
  double time_ns = 0;                      // predicted, at the config's clock
  double coalesced_share = 0;              // predicted: coalesced over all read sectors
};

// Each row's probe on `machine` (a whole chip), in the file's order, its tensors from the row's offset_bytes
// where it has one. Throws InputError (the file's line) for a row that ran on other SMs than the machine
// has cores.
std::vector<ProbeComparison> compare_probes(Machine& machine, const std::vector<MeasuredProbe>& rows,
                                            const std::string& path);

// One line per row: its shape, then predicted / measured (and their ratio) for DRAM reads and writes, fabric
// sectors, read lookup misses and time; a dash where the file did not measure it. Files with the L2 request
// coalescer's counters also get the share of read sectors it merged.
void print_probe_comparison(std::ostream& out, const std::string& path,
                            const std::vector<ProbeComparison>& rows);

}  // namespace attnsim
