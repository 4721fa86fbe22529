// Runs the real attnsim binary (ATTNSIM_CLI) with `args`, stdout and stderr redirected to files in
// `capture_dir` (so a chatty child cannot block on a full pipe), and returns its exit status and output.
// Shared by the tests that check the command line's contract end to end.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace attnsim::testing {

struct CliOutcome {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string out;
  std::string err;
};

inline std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline CliOutcome run_cli(const std::vector<std::string>& args, const std::filesystem::path& capture_dir) {
  const std::string out_path = (capture_dir / "stdout").string(),
                    err_path = (capture_dir / "stderr").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> full = {ATTNSIM_CLI};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, ATTNSIM_CLI, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CliOutcome outcome;
  if (rc != 0) {
    ADD_FAILURE() << "cannot spawn " << ATTNSIM_CLI;
    return outcome;
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (WIFEXITED(wstatus)) outcome.status = WEXITSTATUS(wstatus);
  outcome.out = read_whole_file(out_path);
  outcome.err = read_whole_file(err_path);
  return outcome;
}

}  // namespace attnsim::testing
