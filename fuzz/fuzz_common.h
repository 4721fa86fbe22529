// Shared by the libFuzzer targets. The policy of every target: bad input must end in an InputError (the
// CLI's exit 2). Any other exception escapes LLVMFuzzerTestOneInput and aborts, so libFuzzer records it
// as a crash: in the CLI it would be "internal error" (exit 3), which issue 11 counts as a defect.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace attnsim::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The config loader and the CSV reader take paths, so an input is written to a file first. One file per
// process (the pid in its name), rewritten for every input; in /dev/shm when there is one, to spare disks.
inline const std::string& scratch_path(const char* suffix) {
  static const std::string path = [&] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/attnsim-fuzz-" + std::to_string(getpid()) + suffix;
  }();
  return path;
}

inline void write_scratch(const std::string& path, std::string_view text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();  // the harness itself failed: stop rather than fuzz nothing
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), f) != text.size()) std::abort();
  std::fclose(f);
}

}  // namespace attnsim::fuzz
