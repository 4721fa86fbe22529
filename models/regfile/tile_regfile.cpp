#include "models/regfile/tile_regfile.h"

#include <fmt/format.h>

#include <stdexcept>

#include "models/common/registry.h"

namespace attnsim {

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace

TileRegisterFile::TileRegisterFile(sc_core::sc_module_name instance, const Params& params)
    : Component(instance), params_(params) {
  if (params_.count < 1 || params_.width_bytes < 1 || params_.read_ports < 1 || params_.write_ports < 1)
    throw std::invalid_argument(
        fmt::format("{}: count, width_bytes, read_ports and write_ports must be positive", name()));

  stats_.add(&bytes_read, "bytes_read", "bytes", "bytes read from registers");
  stats_.add(&bytes_written, "bytes_written", "bytes", "bytes written to registers");
  stats_.add(&registers_used, "registers_used", "registers", "registers assigned to buffers");
  stats_.add(&buffer_count, "buffer_count", "buffers", "buffers placed in registers");
  stats_.add(&elapsed_cycles, "elapsed_cycles", "cycles", "length of the run the utilisations refer to");
  stats_.add_formula(
      [this] { return static_cast<double>(registers_used) / static_cast<double>(params_.count); },
      "occupancy", "fraction", "registers_used / count");
  stats_.add_formula(
      [this] {
        const double peak = static_cast<double>(params_.width_bytes * params_.read_ports) *
                            static_cast<double>(elapsed_cycles);
        return peak > 0 ? static_cast<double>(bytes_read) / peak : 0.0;
      },
      "read_utilisation", "fraction", "bytes_read / (width_bytes * read_ports * elapsed_cycles)");
  stats_.add_formula(
      [this] {
        const double peak = static_cast<double>(params_.width_bytes * params_.write_ports) *
                            static_cast<double>(elapsed_cycles);
        return peak > 0 ? static_cast<double>(bytes_written) / peak : 0.0;
      },
      "write_utilisation", "fraction", "bytes_written / (width_bytes * write_ports * elapsed_cycles)");
}

uint64_t TileRegisterFile::registers_for(uint64_t bytes) const {
  return ceil_div(bytes, static_cast<uint64_t>(params_.width_bytes));
}

std::vector<uint64_t> TileRegisterFile::allocate(const std::vector<BufferRequest>& buffers,
                                                 const std::string& file) {
  const auto count = static_cast<uint64_t>(params_.count);
  std::vector<uint64_t> first;
  first.reserve(buffers.size());
  uint64_t next = 0;  // saturates rather than wraps, so absurd sizes still report "too many"
  const BufferRequest* first_misfit = nullptr;
  bool saturated = false;
  for (const BufferRequest& b : buffers) {
    first.push_back(next);
    const uint64_t regs = registers_for(b.bytes);
    saturated = saturated || regs > UINT64_MAX - next;
    next = saturated ? UINT64_MAX : next + regs;
    if (!first_misfit && next > count) first_misfit = &b;
  }
  if (first_misfit) {
    std::string list;
    for (const BufferRequest& b : buffers) {
      const uint64_t regs = registers_for(b.bytes);
      list += fmt::format("{}{} {} ({} {})", list.empty() ? "" : ", ", b.name, b.bytes, regs,
                          regs == 1 ? "reg" : "regs");
    }
    throw InputError(file, first_misfit->loc,
                     fmt::format("buffers need {} registers of {} bytes but {}.count is {}: {}",
                                 saturated ? "more than 2^64" : std::to_string(next), params_.width_bytes,
                                 basename(), params_.count, list));
  }
  // Allocation starts a run: traffic counters restart with it.
  bytes_read = bytes_written = 0;
  registers_used = next;
  buffer_count = buffers.size();
  return first;
}

uint64_t TileRegisterFile::access_cycles(uint64_t bytes, bool is_write) const {
  if (bytes == 0) return 0;
  const int64_t ports = is_write ? params_.write_ports : params_.read_ports;
  return ceil_div(bytes, static_cast<uint64_t>(params_.width_bytes) * static_cast<uint64_t>(ports));
}

void register_tile_regfile_models() {
  Registry<TileRegisterFile>::instance().add(
      "vector_regs", "vector/accumulator registers of fixed width; buffers get whole registers",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        TileRegisterFile::Params d;
        TileRegisterFile::Params params;
        params.count = p.get<int64_t>("count", d.count, "registers", "number of registers", 1, 1 << 20);
        params.width_bytes =
            p.get<int64_t>("width_bytes", d.width_bytes, "bytes",
                           "bytes in one register (default: 8 x 128 lanes x 4 bytes)", 1, 1 << 30);
        params.read_ports = p.get<int64_t>("read_ports", d.read_ports, "ports",
                                           "registers that can be read per cycle", 1, 1024);
        params.write_ports = p.get<int64_t>("write_ports", d.write_ports, "ports",
                                            "registers that can be written per cycle", 1, 1024);
        return std::make_unique<TileRegisterFile>(instance, params);
      });
}

}  // namespace attnsim
