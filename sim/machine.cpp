#include "sim/machine.h"

#include "models/common/registry.h"

namespace attnsim {

void register_builtin_models() {
  static bool done = false;
  if (done) return;
  done = true;
  register_dram_models();
  register_regfile_models();
  register_mac_models();
  register_alu_models();
}

Machine::Machine(const MachineConfig& config) {
  register_builtin_models();
  ParamReader top(config.root, "", config.source);
  name_ = top.get<std::string>("name", "unnamed", "", "machine name shown in reports");
  top.get<std::string>("description", "", "", "one line about the machine and its sources");
  std::string dtype = top.choice("dtype", "f32", {"f16", "bf16", "f32", "f64"},
                                 "register / compute precision; tensors default to it");
  dtype_ = *parse_dtype(dtype);
  clock_ghz_ = top.get<double>("clock_ghz", 1.0, "GHz", "core clock: converts cycles to seconds", 1e-6);

  ParamReader dram = top.child("dram", "off-chip memory");
  dram_ = Registry<Dram>::instance().create("dram", dram, "word");
  ParamReader regfile = top.child("regfile", "register file");
  regfile_ = Registry<RegisterFile>::instance().create("regfile", regfile, "regfile");
  ParamReader mac = top.child("mac", "multiply-accumulate unit");
  mac_ = Registry<MacUnit>::instance().create("mac", mac, "mac");
  ParamReader alu = top.child("alu", "arithmetic unit");
  alu_ = Registry<Alu>::instance().create("alu", alu, "alu");
  ParamReader seq = top.child("sequencer", "instruction issue");
  Sequencer::Params seq_params;
  seq_params.clock_ghz = clock_ghz_;
  register_sequencer_params(seq, seq_params);
  for (const ParamReader* r : {&dram, &regfile, &mac, &alu, &seq}) r->finish();
  top.finish();
  sequencer_ = std::make_unique<Sequencer>("sequencer", seq_params, *dram_, *regfile_, *mac_, *alu_);
  effective_ = top.effective();
  docs_ = top.docs();
}

void Machine::load(const isa::Program& program, bool symbolic) { sequencer_->load(program, dtype_, symbolic); }

void Machine::run() {
  sequencer_->start();
  sc_core::sc_start();
  sequencer_->rethrow_if_failed();
}

nlohmann::json Machine::stats_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const Component* c : std::initializer_list<const Component*>{sequencer_.get(), dram_.get(), regfile_.get(),
                                                                   mac_.get(), alu_.get()})
    out[c->stats().name()] = c->stats().to_json();
  return out;
}

}  // namespace attnsim
