// libsystemc.so refers to sc_main, which its own main() calls. In a fuzz target libFuzzer's main() runs
// instead and sc_main is never called; SystemC elaborates on first use. (C linkage, as sc_externs.h
// declares.)
extern "C" int sc_main(int, char**) {
  return 0;
}
