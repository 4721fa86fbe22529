// libFuzzer target: the measurements CSV reader of `attnsim validate` (sim/validate.cpp,
// read_measurements). Only the reader: simulating a row takes seconds, far too long per input.
#include "fuzz/fuzz_common.h"
#include "isa/diagnostics.h"
#include "sim/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnsim;
  const std::string& path = fuzz::scratch_path(".csv");
  fuzz::write_scratch(path, fuzz::as_text(data, size));
  try {
    read_measurements(path);
  } catch (const InputError&) {
  }
  return 0;
}
