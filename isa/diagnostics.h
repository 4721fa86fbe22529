// Diagnostics shared by the assembler, the config loader and the simulator: every user-facing error
// carries a location so the message reads `file:line:col: error: ...` (or names the YAML key path).
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

namespace attnsim {

struct SourceLoc {
  int line = 0;  // 1-based; 0 means "no line" (e.g. a -p override)
  int col = 0;   // 1-based
};

// An error in user input (trace, config, command line). The CLI prints what() and exits with status 2.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, SourceLoc loc, const std::string& message)
      : std::runtime_error(format(file, loc, message)), file_(file), loc_(loc), message_(message) {}

  const std::string& file() const { return file_; }
  SourceLoc loc() const { return loc_; }
  const std::string& message() const { return message_; }

 private:
  static std::string format(const std::string& file, SourceLoc loc, const std::string& message) {
    std::string out = file;
    if (loc.line > 0) out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
    return out + ": error: " + message;
  }

  std::string file_;
  SourceLoc loc_;
  std::string message_;
};

// The system's reason for a failed open or write (errno), for "cannot open ...: No such file or directory".
inline std::string system_reason(int error) {
  return error ? std::strerror(error) : "unknown reason";
}

}  // namespace attnsim
