#include "models/common/energy.h"

namespace attnsim {

EnergyParams read_energy_params(ParamReader& p) {
  // 1 nJ per access bounds every figure: far above any published one, so a unit slip (nJ for pJ) fails.
  constexpr double kMax = 1000.0;
  EnergyParams e;
  e.dram_pj_per_bit = p.get<double>("dram_pj_per_bit", 0.0, "pJ/bit",
                                    "off-chip DRAM (HBM): energy per bit transferred, sector-rounded "
                                    "reads and writes as the DRAM served them",
                                    0.0, kMax);
  e.l2_pj_per_byte = p.get<double>("l2_pj_per_byte", 0.0, "pJ/byte",
                                   "L2 data array: energy per byte the cores read or write there and per "
                                   "byte filled from or written back to DRAM",
                                   0.0, kMax);
  e.noc_pj_per_bit = p.get<double>("noc_pj_per_bit", 0.0, "pJ/bit",
                                   "on-chip network between the cores and L2: energy per bit the cores "
                                   "load or store across it",
                                   0.0, kMax);
  e.sram_pj_per_byte = p.get<double>("sram_pj_per_byte", 0.0, "pJ/byte",
                                     "SRAM / shared memory: energy per byte read or written through its "
                                     "ports (DMA fills and drains, MXU/VPU operands)",
                                     0.0, kMax);
  e.regfile_pj_per_byte = p.get<double>("regfile_pj_per_byte", 0.0, "pJ/byte",
                                        "register file: energy per byte read or written", 0.0, kMax);
  e.mac_pj = p.get<double>("mac_pj", 0.0, "pJ/MAC",
                           "one multiply-accumulate at the machine's dtype (MXU, or the scalar MAC unit)",
                           0.0, kMax);
  e.vector_op_pj =
      p.get<double>("vector_op_pj", 0.0, "pJ/op",
                    "one element operation of the vector unit (or one scalar ALU instruction)", 0.0, kMax);
  return e;
}

namespace {

uint64_t tensor_sum(const EnergyLevel& l) {
  uint64_t sum = 0;
  for (const auto& [tensor, count] : l.count_per_tensor) sum += count;
  return sum;
}

}  // namespace

double EnergyReport::total_pj() const {
  double sum = 0;
  for (const auto& l : levels) sum += l.pj();
  return sum;
}

const EnergyLevel* EnergyReport::level(const std::string& name) const {
  for (const auto& l : levels)
    if (l.name == name) return &l;
  return nullptr;
}

nlohmann::json EnergyReport::to_json() const {
  nlohmann::json levels_json = nlohmann::json::object();
  for (const auto& l : levels) {
    nlohmann::json j = {
        {"pj", l.pj()}, {"count", l.count}, {"count_unit", l.count_unit}, {"pj_per_count", l.pj_per_count}};
    if (!l.count_per_tensor.empty()) {
      nlohmann::json per = nlohmann::json::object();
      for (const auto& [tensor, count] : l.count_per_tensor)
        per[tensor] = l.pj_per_count * static_cast<double>(count);
      j["pj_per_tensor"] = per;
      // What the ledger does not charge to a tensor (SRAM: the MXU/VPU operands, buffers not tensors).
      j["pj_not_by_tensor"] = l.pj() - l.pj_per_count * static_cast<double>(tensor_sum(l));
    }
    levels_json[l.name] = j;
  }
  return {{"scope", scope}, {"unit", "pJ"}, {"total_pj", total_pj()}, {"levels", levels_json}};
}

std::map<std::string, double> energy_per_tensor(const EnergyReport& report) {
  std::map<std::string, double> out;
  for (const auto& l : report.levels)
    for (const auto& [tensor, count] : l.count_per_tensor)
      out[tensor] += l.pj_per_count * static_cast<double>(count);
  return out;
}

}  // namespace attnsim
