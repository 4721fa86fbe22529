// `attnsim sweep --slurm N`: the sweep as a Slurm job array (task K runs --shard K/N) and a merge job that
// waits for the array. Both are plain sbatch scripts written next to OUT, so they can be read, edited and
// submitted again by hand.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "isa/diagnostics.h"
#include "sim/run.h"
#include "sim/sweep.h"

extern char** environ;

namespace attnsim {

namespace {

namespace fs = std::filesystem;

// Single quotes keep every character but the quote itself, which becomes '\''.
std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "_-+=/.,:@%") == std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// `sbatch --parsable ...`: its job id (the part before ";cluster"), or an InputError with sbatch's message.
std::string sbatch(const std::vector<std::string>& args) {
  const fs::path scratch = fs::temp_directory_path() / fmt::format("attnsim-sbatch-{}", ::getpid());
  fs::create_directories(scratch);
  const std::string out = (scratch / "out").string(), err = (scratch / "err").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> owned = {"sbatch", "--parsable"};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, "sbatch", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (spawned == 0)
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  const std::string id = read_text(out), message = read_text(err);
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  if (spawned != 0)
    throw InputError("attnsim sweep --slurm", {},
                     "cannot run sbatch: " + system_reason(spawned) +
                         " (is Slurm installed? --no-submit writes the scripts only)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError("attnsim sweep --slurm", {}, "sbatch failed: " + message);
  return id.substr(0, id.find_first_of(";\n"));
}

// The sweep's arguments as given, less the options that submit rather than run it.
std::vector<std::string> without_slurm_options(const std::vector<std::string>& args) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--no-submit" || args[i].starts_with("--slurm=") || args[i].starts_with("--sbatch="))
      continue;
    if (args[i] == "--slurm" || args[i] == "--sbatch") {
      ++i;
      continue;
    }
    kept.push_back(args[i]);
  }
  return kept;
}

}  // namespace

int submit_slurm(const SweepSpec& spec, const std::vector<std::string>& given_args, int tasks,
                 const std::vector<std::string>& sbatch_args, bool submit, const std::string& self) {
  const std::string where = "attnsim sweep --slurm";
  if (tasks < 1) throw InputError(where, {}, "--slurm N: N must be 1 or more");
  if (spec.shards) throw InputError(where, {}, "--slurm makes the shards itself: drop --shard");
  const size_t points = sweep_points(spec.axes).size();
  if (size_t(tasks) > points)
    throw InputError(where, {},
                     fmt::format("--slurm {}: more tasks than the sweep's {} points", tasks, points));
  check_sweep(spec, self);  // bad input stops here, not in N array tasks
  const std::string stem = sweep_output_stem(spec.output);
  const std::string cwd = fs::current_path().string();
  // #SBATCH lines are not parsed by a shell: no quoting can carry a space there.
  if ((stem + cwd).find_first_of(" \t\n'\"") != std::string::npos)
    throw InputError(where, {},
                     "the output path and the working directory must not contain spaces or quotes");
  std::string command = shell_quote(self) + " sweep";
  for (const auto& a : without_slurm_options(given_args)) command += " " + shell_quote(a);
  // Without --jobs a task would start a child per core of the node, whatever it was given.
  const bool jobs_given = spec.jobs > 0;
  const std::string array = fmt::format(
      "#!/bin/bash\n"
      "# Written by `attnsim sweep --slurm {0}`: task K of this array runs shard K/{0} of the sweep into\n"
      "# {1}.shard-K-of-{0}.csv/.jsonl. Resubmitting it (or one task: sbatch --array=K) resumes the shards.\n"
      "#SBATCH --job-name=attnsim-sweep\n"
      "#SBATCH --array=1-{0}\n"
      "#SBATCH --chdir={2}\n"
      "#SBATCH --output={1}.slurm-%a.log\n"
      "set -eu\n"
      "exec {3} --shard \"$SLURM_ARRAY_TASK_ID/{0}\"{4}\n",
      tasks, stem, cwd, command, jobs_given ? "" : " --jobs \"${SLURM_CPUS_PER_TASK:-1}\"");
  std::string shard_list;
  for (int k = 1; k <= tasks; ++k) shard_list += " " + shell_quote(sweep_output_stem(spec.output, k, tasks));
  const std::string merge = fmt::format(
      "#!/bin/bash\n"
      "# Written by `attnsim sweep --slurm {0}`: joins the {0} shards into {1}.csv/.jsonl once the array\n"
      "# has ended (afterany: a shard with failed points exits 1 and is still merged; a missing one is "
      "named).\n"
      "#SBATCH --job-name=attnsim-merge\n"
      "#SBATCH --chdir={2}\n"
      "#SBATCH --output={1}.slurm-merge.log\n"
      "exec {3} sweep merge {5}{4}\n",
      tasks, stem, cwd, shell_quote(self), shard_list, shell_quote(stem));
  const std::string array_path = stem + ".sbatch", merge_path = stem + ".merge.sbatch";
  write_files_atomically({{array_path, array}, {merge_path, merge}});
  if (!submit) {
    std::cerr << fmt::format(
        "sweep: wrote {} and {}; submit with\n  id=$(sbatch --parsable {})\n  sbatch "
        "--dependency=afterany:$id {}\n",
        array_path, merge_path, array_path, merge_path);
    return 0;
  }
  std::vector<std::string> args = sbatch_args;
  args.push_back(array_path);
  const std::string array_id = sbatch(args);
  args = sbatch_args;
  args.insert(args.end(), {"--dependency=afterany:" + array_id, merge_path});
  const std::string merge_id = sbatch(args);
  std::cout << fmt::format("array job {} ({} tasks), merge job {}\n", array_id, tasks, merge_id);
  std::cerr << fmt::format(
      "sweep: submitted {} ({} tasks) and {}; results in {}.csv and {}.jsonl when job {} "
      "ends; logs {}.slurm-*.log\n",
      array_path, tasks, merge_path, stem, stem, merge_id, stem);
  return 0;
}

}  // namespace attnsim
