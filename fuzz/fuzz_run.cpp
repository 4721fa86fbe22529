// libFuzzer target: a whole small run, as `attnsim run` does it: assemble, load, simulate, evaluate the
// `.check` lines. A scalar trace runs on the 6-register toy machine, a tile program on the toy tile machine,
// each with blocking and with pipelined issue (two code paths in the sequencer). Inputs are bounded before
// they run (instructions, elements) so that no input can take long or use much memory.
#include <memory>
#include <systemc>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "isa/assembler.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "sim/reference.h"

namespace {

using namespace attnsim;

constexpr size_t kMaxInstructions = 512;
constexpr int64_t kMaxElements = 16384;  // summed over tensors, and again over buffers

// SystemC elaborates once per process, so the machines are built once and every input runs on them in
// turn; all four exist together (SystemC renames the duplicate module names, with a warning).
struct Machines {
  std::unique_ptr<Machine> scalar_blocking, scalar_pipelined, tile_blocking, tile_pipelined;
};
Machines* machines = nullptr;

std::unique_ptr<Machine> build(const char* config, std::vector<std::string> overrides) {
  return std::make_unique<Machine>(
      load_config(std::string(ATTNSIM_SOURCE_DIR) + "/configs/" + config, overrides));
}

// The sum of `sizes`, or -1 when it exceeds kMaxElements (each factor is checked, so nothing overflows).
template <class Range, class Elements>
int64_t bounded_total(const Range& range, Elements elements) {
  int64_t total = 0;
  for (const auto& item : range) {
    const int64_t n = elements(item);
    if (n < 0 || n > kMaxElements - total) return -1;
    total += n;
  }
  return total;
}

int64_t bounded_product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxElements / d)) return -1;
    n *= d;
  }
  return n;
}

void run_on(Machine& machine, const isa::Program& program) {
  machine.load(program, /*symbolic=*/false);
  Sequencer& sequencer = machine.sequencer();
  std::vector<std::vector<double>> initial, final;
  for (size_t t = 0; t < program.tensors.size(); ++t) initial.push_back(sequencer.tensor_values(int(t)));
  machine.run();
  for (size_t t = 0; t < program.tensors.size(); ++t) final.push_back(sequencer.tensor_values(int(t)));
  for (const isa::Check& check : program.checks)
    evaluate_check(program, check, initial, final, compute_dtype_of(program, machine.dtype()));
  (void)machine.stats_json().dump();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_ID_INSTANCE_EXISTS_, sc_core::SC_DO_NOTHING);
  machines = new Machines{build("toy-6reg.yaml", {}), build("toy-6reg.yaml", {"sequencer.issue=pipelined"}),
                          build("toy-tile.yaml", {}), build("toy-tile.yaml", {"sequencer.issue=pipelined"})};
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  isa::Program program;
  try {
    program = isa::assemble(fuzz::as_text(data, size), "fuzz.trace");
  } catch (const InputError&) {
    return 0;
  }
  // Out of bounds for this target, not an error: such a program is simply not run.
  if (program.instructions.size() > kMaxInstructions ||
      bounded_total(program.tensors, [](const isa::TensorDecl& t) { return bounded_product(t.shape); }) < 0 ||
      bounded_total(program.buffers, [](const isa::BufferDecl& b) {
        return bounded_product({b.rows, b.cols});
      }) < 0)
    return 0;
  const bool tiles = program.has_tiles() || !program.buffers.empty();
  for (Machine* machine :
       tiles ? std::initializer_list<Machine*>{machines->tile_blocking.get(), machines->tile_pipelined.get()}
             : std::initializer_list<Machine*>{machines->scalar_blocking.get(),
                                               machines->scalar_pipelined.get()}) {
    try {
      run_on(*machine, program);
    } catch (const InputError&) {
    }
  }
  return 0;
}
