#include "sim/probe_samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnsim {

ProbeSamplesRecorder::ProbeSamplesRecorder(int64_t loads_per_pass, int64_t passes, int64_t samples)
    : loads_per_pass_(loads_per_pass), passes_(passes), samples_(samples) {
  if (samples < 1 || samples > loads_per_pass)
    throw std::invalid_argument(
        fmt::format("--samples-per-pass must be 1 to {} (the chunks a block reads a pass)", loads_per_pass));
}

void ProbeSamplesRecorder::after_step(const BlockRecord& block, isa::Opcode op, uint64_t, uint64_t done) {
  if (op != isa::Opcode::Load) return;
  Reader& r = readers_[block.index[0]];
  if (r.loads == 0) r.core = block.core, r.start = block.start_cycle;
  r.latest = std::max(r.latest, done);
  ++r.loads;
  // validation/l2_probe.cu's points: after chunk count * (k + 1) / samples of each pass.
  const int64_t in_pass = (r.loads - 1) % loads_per_pass_ + 1;
  const auto next = static_cast<int64_t>(r.points.size()) % samples_;
  if (in_pass == loads_per_pass_ * (next + 1) / samples_) r.points.push_back(r.latest);
}

std::string ProbeSamplesRecorder::csv(double clock_ghz) const {
  std::string out = "block,sm,start_ns";
  for (int64_t p = 0; p < passes_; ++p)
    for (int64_t k = 0; k < samples_; ++k)
      out += samples_ == 1 ? fmt::format(",pass{}_end_ns", p)
                           : fmt::format(",pass{}_{}_of_{}_ns", p, k + 1, samples_);
  out += "\n";
  uint64_t first = UINT64_MAX;
  for (const auto& [index, r] : readers_) first = std::min(first, r.start);
  const auto ns = [&](uint64_t cycle) { return fmt::format("{:.0f}", double(cycle - first) / clock_ghz); };
  for (const auto& [index, r] : readers_) {
    if (r.loads != loads_per_pass_ * passes_ || static_cast<int64_t>(r.points.size()) != passes_ * samples_)
      throw std::logic_error(fmt::format("probe samples: block {} made {} loads", index, r.loads));
    out += fmt::format("{},{},{}", index, r.core, ns(r.start));
    for (uint64_t t : r.points) out += "," + ns(t);
    out += "\n";
  }
  return out;
}

}  // namespace attnsim
