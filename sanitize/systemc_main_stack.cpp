// Sanitizer build only (ATTNSIM_SANITIZE): loaded by every program that links SystemC.
//
// Debian's SystemC 2.3.4 tells AddressSanitizer when it switches between coroutines, but it never learns
// the main stack: each switch back to the main coroutine announces a stack at address 0 of size 0. From
// the first switch on, ASan's idea of the main thread's stack is empty, so
//  - an exception thrown on the main stack (Sequencer::rethrow_if_failed after sc_start, any input error
//    after a run) cannot unpoison the frames it unwinds; their stale redzones give false reports later;
//  - LeakSanitizer no longer scans the main stack, and memory only it points to is reported as leaked.
// The fix gives the main coroutine its real stack before the first switch: SystemC creates the main
// coroutine, calls start_of_simulation() on every module, and only then switches to a process.
// (2.3.4 also drops ASan's fake stacks at every switch, so the build compiles without them:
// -fsanitize-address-use-after-return=never in scripts/asan-build.sh.)
#include <sanitizer/common_interface_defs.h>

#include <sysc/kernel/sc_cor.h>  // sc_cor_pkg, which <systemc> only declares
#include <cstddef>
#include <cstdlib>
#include <systemc>

namespace {

// The fields of SystemC's QuickThreads coroutine (sysc/kernel/sc_cor_qt.h, not installed by Debian) after
// sc_cor's vtable pointer: what its yield() passes to __sanitizer_start_switch_fiber.
struct QtCoroutineLayout {
  void* vtable;
  std::size_t stack_size;
  void* stack;
};

class MainStackForAsan : public sc_core::sc_module {
 public:
  MainStackForAsan() : sc_core::sc_module(sc_core::sc_module_name("attnsim_asan_main_stack")) {}

  void start_of_simulation() override {
    sc_core::sc_cor* main = sc_core::sc_get_curr_simcontext()->cor_pkg()->get_main();
    auto* fields = reinterpret_cast<QtCoroutineLayout*>(main);
    if (fields->stack != nullptr || fields->stack_size != 0) return;  // a SystemC that keeps it itself
    // ASan's own bounds of the main stack, read by a switch to nowhere and back.
    void* fake_stack = nullptr;
    const void* bottom = nullptr;
    std::size_t size = 0;
    __sanitizer_start_switch_fiber(&fake_stack, nullptr, 0);
    __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
    __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
    fields->stack = const_cast<void*>(bottom);
    fields->stack_size = size;
    // SystemC 2.3.4 frees a coroutine's stack when it destroys it, the main one included, at exit: hand
    // the main stack back first (atexit functions registered now run before that static destructor).
    main_fields = fields;
    std::atexit([] {
      main_fields->stack = nullptr;
      main_fields->stack_size = 0;
    });
  }

 private:
  static inline QtCoroutineLayout* main_fields = nullptr;
};

// Built before main(), while SystemC elaborates; never destroyed, as SystemC's own simulation context.
[[maybe_unused]] const MainStackForAsan* const main_stack_for_asan = new MainStackForAsan;

}  // namespace
