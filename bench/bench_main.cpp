// libsystemc owns main() and calls sc_main(); this main only silences the SystemC banner first.
#include <cstdlib>
#include <systemc>

int main(int argc, char** argv) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
