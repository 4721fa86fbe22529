#include "models/sram/sram.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "models/common/registry.h"

namespace attnsim {

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// Saturating, so a huge request reports "needs more than capacity" instead of wrapping around.
uint64_t add_sat(uint64_t a, uint64_t b) {
  return a > kMax - b ? kMax : a + b;
}

uint64_t align_up(uint64_t offset, uint64_t alignment) {
  const uint64_t rem = offset % alignment;
  return rem == 0 ? offset : add_sat(offset, alignment - rem);
}

}  // namespace

Sram::Sram(sc_core::sc_module_name instance, const Params& params) : Component(instance), params_(params) {
  if (params_.capacity_bytes < 1 || params_.banks < 1 || params_.ports < 1 ||
      !(params_.bytes_per_cycle > 0) || params_.alignment_bytes < 1)
    throw std::invalid_argument(fmt::format(
        "{}: capacity_bytes, banks, ports, bytes_per_cycle and alignment_bytes must be positive", name()));

  stats_.add(&bytes_read, "bytes_read", "bytes",
             "bytes read through the ports (DMA stores, compute operands)");
  stats_.add(&bytes_written, "bytes_written", "bytes",
             "bytes written through the ports (DMA loads, results)");
  stats_.add(&allocated_bytes, "allocated_bytes", "bytes",
             "end of the buffer layout: sizes plus alignment padding between buffers");
  stats_.add(&peak_occupancy_bytes, "peak_occupancy_bytes", "bytes",
             "most bytes allocated at once; buffers are static, so equal to allocated_bytes");
  stats_.add(&buffer_count, "buffer_count", "buffers", "buffers allocated");
  stats_.add(&elapsed_cycles, "elapsed_cycles", "cycles", "length of the run the averages refer to");
  stats_.add_formula(
      [this] {
        return elapsed_cycles
                   ? static_cast<double>(bytes_read + bytes_written) / static_cast<double>(elapsed_cycles)
                   : 0.0;
      },
      "average_bytes_per_cycle", "bytes/cycle",
      "(bytes_read + bytes_written) / elapsed_cycles; 0 before the run's length is set");
  stats_.add_formula(
      [this] {
        const double peak = params_.bytes_per_cycle * static_cast<double>(params_.ports) *
                            static_cast<double>(elapsed_cycles);
        return peak > 0 ? static_cast<double>(bytes_read + bytes_written) / peak : 0.0;
      },
      "bandwidth_utilisation", "fraction",
      "(bytes_read + bytes_written) / (ports * bytes_per_cycle * elapsed_cycles)");
  stats_.add_formula(
      [this] {
        return static_cast<double>(peak_occupancy_bytes) / static_cast<double>(params_.capacity_bytes);
      },
      "occupancy", "fraction", "peak_occupancy_bytes / capacity_bytes");
}

std::vector<uint64_t> Sram::allocate(const std::vector<BufferRequest>& buffers, const std::string& file) {
  // Lay out every buffer first, even past capacity, so the error can give the whole picture.
  std::vector<uint64_t> offsets;
  offsets.reserve(buffers.size());
  uint64_t end = 0;
  const BufferRequest* first_misfit = nullptr;
  bool padded = false;
  for (const BufferRequest& b : buffers) {
    const uint64_t offset = align_up(end, params_.alignment_bytes);
    padded = padded || offset != end;
    offsets.push_back(offset);
    end = add_sat(offset, b.bytes);
    if (!first_misfit && end > params_.capacity_bytes) first_misfit = &b;
  }
  if (first_misfit) {
    std::string list;
    for (const BufferRequest& b : buffers)
      list += fmt::format("{}{} {}", list.empty() ? "" : ", ", b.name, b.bytes);
    const std::string total = end == kMax ? "more than 2^64" : std::to_string(end);
    throw InputError(
        file, first_misfit->loc,
        fmt::format("buffers need {} bytes{} but {}.capacity_bytes is {}: {}", total,
                    padded ? fmt::format(" (with {}-byte alignment)", params_.alignment_bytes) : "",
                    basename(), params_.capacity_bytes, list));
  }
  // Allocation starts a run: traffic counters restart with it.
  bytes_read = bytes_written = 0;
  allocated_bytes = end;
  peak_occupancy_bytes = end;
  buffer_count = buffers.size();
  return offsets;
}

uint64_t Sram::access_cycles(uint64_t bytes) const {
  if (bytes == 0) return 0;
  // Whole bytes per cycle (every preset): an integer ceiling, cheaper than the floating-point path on a
  // call made for every tile instruction.
  const auto whole = static_cast<uint64_t>(params_.bytes_per_cycle);
  if (static_cast<double>(whole) == params_.bytes_per_cycle && whole > 0) return (bytes + whole - 1) / whole;
  // ceil in floating point, then corrected, so an exact multiple never rounds up by representation error.
  const double bpc = params_.bytes_per_cycle;
  auto cycles = static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) / bpc));
  if (cycles > 1 && static_cast<double>(cycles - 1) * bpc >= static_cast<double>(bytes)) --cycles;
  return cycles < 1 ? 1 : cycles;
}

void register_sram_models() {
  Registry<Sram>::instance().add(
      "scratchpad", "software-managed SRAM: static buffer allocation, ports of fixed bytes per cycle",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        Sram::Params d;
        Sram::Params params;
        params.capacity_bytes = static_cast<uint64_t>(
            p.get<int64_t>("capacity_bytes", static_cast<int64_t>(d.capacity_bytes), "bytes",
                           "bytes available to buffers (default: 228 KiB, the H100 SM's shared memory)", 1));
        params.banks = p.get<int64_t>("banks", d.banks, "banks",
                                      "SRAM banks (reported; conflicts not modelled)", 1, 1 << 20);
        params.ports = p.get<int64_t>("ports", d.ports, "ports", "independent access ports", 1, 1 << 20);
        params.bytes_per_cycle =
            p.get<double>("bytes_per_cycle", d.bytes_per_cycle, "bytes/cycle", "bandwidth of one port", 1e-9);
        params.alignment_bytes = static_cast<uint64_t>(
            p.get<int64_t>("alignment_bytes", static_cast<int64_t>(d.alignment_bytes), "bytes",
                           "every buffer starts at a multiple of this", 1, 1ll << 30));
        return std::make_unique<Sram>(instance, params);
      });
}

}  // namespace attnsim
