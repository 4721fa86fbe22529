// libFuzzer target: the trace assembler (isa/assembler.cpp) on any text. A trace it accepts must also
// survive the round trip of `attnsim disasm`: the canonical text assembles again to the same canonical
// text (the property tests/isa/test_roundtrip.cpp checks on known traces).
#include <cstdlib>

#include "fuzz/fuzz_common.h"
#include "isa/assembler.h"
#include "isa/disassembler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnsim;
  std::string canonical;
  try {
    const isa::Program program = isa::assemble(fuzz::as_text(data, size), "fuzz.trace");
    canonical = isa::disassemble(program);
  } catch (const InputError&) {
    return 0;
  }
  try {
    const isa::Program again = isa::assemble(canonical, "canonical.trace");
    if (isa::disassemble(again) != canonical) {
      std::fprintf(stderr, "disassembly is not a fixed point:\n%s\n", canonical.c_str());
      std::abort();
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "disassembly does not assemble: %s\n%s\n", e.what(), canonical.c_str());
    std::abort();
  }
  return 0;
}
