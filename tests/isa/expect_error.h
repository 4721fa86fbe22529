// Shared by the assembler tests: assemble a trace text, and assert that assembling fails at a location.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "isa/assembler.h"
#include "isa/diagnostics.h"

namespace attnsim::isa {

inline Program asm_text(const std::string& text) {
  return assemble(text, "t.trace");
}

// Asserts that assembling `text` fails at line:col with a message containing every piece of `pieces`.
inline void expect_error(const std::string& text, int line, int col, const std::vector<std::string>& pieces) {
  SCOPED_TRACE(text);
  try {
    asm_text(text);
    ADD_FAILURE() << "assembled without error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.trace");
    EXPECT_EQ(e.loc().line, line) << e.what();
    EXPECT_EQ(e.loc().col, col) << e.what();
    for (const auto& piece : pieces) EXPECT_NE(e.message().find(piece), std::string::npos) << e.what();
    // The CLI prints what(); it must carry the location in the gcc-like form editors understand.
    std::string prefix = "t.trace:" + std::to_string(line) + ":" + std::to_string(col) + ": error: ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

}  // namespace attnsim::isa
