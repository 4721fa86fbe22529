// GoogleTest driven from sc_main (as DRAMSys does): libsystemc owns main(). Each TEST is registered with
// ctest separately (gtest_discover_tests), so each simulation gets the fresh process SystemC requires.
#include <gtest/gtest.h>

#include <cstdlib>
#include <systemc>

int sc_main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

int main(int argc, char** argv) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
