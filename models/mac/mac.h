// The multiply-accumulate unit: MAC_Z (Rd = Ra*Rb) and MAC (Rd = Ra*Rb + Rc), computed in float64 and rounded
// once to the machine dtype (a fused multiply-add).
#pragma once

#include "models/common/component.h"
#include "models/common/params.h"
#include "models/common/symbolic.h"

namespace attnsim {

class MacUnit : public Component {
 public:
  struct Params {
    int64_t latency = 1;  // cycles, MAC and MAC_Z
  };
  MacUnit(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  static double mac_z(double a, double b) { return a * b; }
  static double mac(double a, double b, double c) { return a * b + c; }
  static symbolic::Expr mac_z(const symbolic::Expr& a, const symbolic::Expr& b) {
    return symbolic::mul(a, b);
  }
  static symbolic::Expr mac(const symbolic::Expr& a, const symbolic::Expr& b, const symbolic::Expr& c) {
    return symbolic::add(c, symbolic::mul(a, b));
  }

  uint64_t ops = 0;
  uint64_t busy_cycles = 0;

 private:
  Params params_;
};

void register_mac_models();

}  // namespace attnsim
