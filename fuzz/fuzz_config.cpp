// libFuzzer target: the machine YAML loader with `-p key=value` overrides (sim/config.cpp) and the typed
// parameter reading of every model (Machine's constructor), which is where bounds are checked.
// Input: the YAML file, then optionally a line `%%` and one override per line.
#include <string>
#include <systemc>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "isa/diagnostics.h"
#include "sim/config.h"
#include "sim/machine.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A failed construction leaves half-built modules behind; SystemC's warnings about them are expected.
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnsim;
  std::string_view text = fuzz::as_text(data, size);
  std::vector<std::string> overrides;
  if (size_t split = text.find("\n%%\n"); split != std::string_view::npos) {
    std::string_view rest = text.substr(split + 4);
    text = text.substr(0, split + 1);
    while (!rest.empty()) {
      const size_t end = rest.find('\n');
      overrides.emplace_back(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    }
  }
  const std::string& path = fuzz::scratch_path(".yaml");
  fuzz::write_scratch(path, text);
  // Every input elaborates in a fresh simulation context: SystemC keeps the names (and processes) of
  // destroyed modules in its context, so with one context each input took longer than the one before
  // (40x slower after 2,000 inputs) and memory grew by ~0.5 MB an input.
  // The first context stays: SystemC's own static events were registered in it and unregister at exit.
  static sc_core::sc_simcontext* const first = sc_core::sc_get_curr_simcontext();
  if (sc_core::sc_curr_simcontext != first) delete sc_core::sc_curr_simcontext;
  sc_core::sc_curr_simcontext = sc_core::sc_default_global_context = new sc_core::sc_simcontext;
  try {
    const MachineConfig config = load_config(path, overrides);
    const Machine machine(config);
    // What `--stats-json` and sweeps write: every string of the config must survive JSON encoding.
    (void)machine.effective_config().dump();
  } catch (const InputError&) {
  }
  return 0;
}
