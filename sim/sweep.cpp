// Runs a sweep: every point as child processes of the same binary (`attnsim config` for the effective
// config, `attnsim compare --json` for the figures), --jobs workers, each finished point appended whole.
#include "sim/sweep.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "isa/diagnostics.h"
#include "sim/run.h"
#include "sim/sweep_output.h"

extern char** environ;

namespace attnsim {

namespace {

namespace fs = std::filesystem;
using Point = std::vector<std::pair<std::string, std::string>>;
using Clock = std::chrono::steady_clock;

struct Child {
  int exit_status = -1;  // -1: killed by `signal`
  int signal = 0;
  std::string out;
  std::string err_line;  // the last non-empty line of stderr: the error, by the CLI's contract
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string last_line(const std::string& text) {
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

// A SIGINT, SIGTERM or SIGHUP sent to the sweep alone (kill, a batch system) is passed on to the running
// children, which a Ctrl-C on a terminal reaches anyway through the process group; no new point starts.
std::atomic<int> g_stop_signal{0};
std::vector<std::atomic<pid_t>>* g_running = nullptr;  // one slot per worker: its child, or 0

extern "C" void forward_signal(int signal) {
  g_stop_signal = signal;
  if (g_running)
    for (auto& pid : *g_running)
      if (const pid_t p = pid.load(); p > 0) ::kill(p, signal);
}

// Installs forward_signal for the workers' lifetime.
class ForwardSignals {
 public:
  explicit ForwardSignals(std::vector<std::atomic<pid_t>>& running) {
    g_running = &running;
    struct sigaction action = {};
    action.sa_handler = forward_signal;
    for (int k = 0; k < 3; ++k) ::sigaction(kSignals[k], &action, &previous_[k]);
  }
  ~ForwardSignals() {
    for (int k = 0; k < 3; ++k) ::sigaction(kSignals[k], &previous_[k], nullptr);
    g_running = nullptr;
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction previous_[3] = {};
};

// Output goes to files, not pipes, so a child with a large JSON cannot block on a full pipe.
Child run_child(const std::vector<std::string>& args, const fs::path& scratch,
                std::atomic<pid_t>* running = nullptr) {
  const std::string out_path = (scratch / "stdout").string(), err_path = (scratch / "stderr").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot run " + args[0] + ": " + system_reason(spawned));
  if (running) *running = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid: " + system_reason(errno));
  if (running) *running = 0;
  Child child;
  if (WIFEXITED(status))
    child.exit_status = WEXITSTATUS(status);
  else
    child.signal = WTERMSIG(status);
  child.out = read_text(out_path);
  child.err_line = last_line(read_text(err_path));
  return child;
}

// Integers as numbers, so whoever reads OUT.jsonl gets typed parameters.
nlohmann::json point_json(const Point& point) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : point) {
    const bool integer =
        !value.empty() && value.size() < 19 && value.find_first_not_of("0123456789") == std::string::npos;
    j[key] = integer ? nlohmann::json(std::stoll(value)) : nlohmann::json(value);
  }
  return j;
}

struct Plan {
  std::string self, config_path;
  std::vector<std::string> fixed_args;  // compare arguments from the fixed options
  std::vector<std::string> keys;        // the swept keys, in order
  nlohmann::json identity;              // what makes two records part of the same sweep
  bool chip = false;
  bool unit_cycles = false;
};

std::vector<std::string> compare_args(const Plan& plan, const Point& point) {
  std::vector<std::string> args = {plan.self, "compare", "-c", plan.config_path};
  args.insert(args.end(), plan.fixed_args.begin(), plan.fixed_args.end());
  for (const auto& [key, value] : point)
    for (auto& a : option_args(key, value)) args.push_back(std::move(a));
  // The child's last stderr line is the point's reason: no progress lines after it.
  // The sweep runs points side by side; each point's schedules run one after another in its child.
  args.insert(args.end(), {"--json", "--progress", "off", "--jobs", "1"});
  return args;
}

// `attnsim config` with the point's -p overrides only: the effective config the compare child ran.
std::vector<std::string> config_args(const Plan& plan, const Point& point) {
  const std::vector<std::string> compare = compare_args(plan, point);
  std::vector<std::string> args = {plan.self, "config", "-c", plan.config_path};
  for (size_t i = 0; i + 1 < compare.size(); ++i)
    if (compare[i] == "-p") args.insert(args.end(), {"-p", compare[i + 1]});
  return args;
}

std::string command_line(const std::vector<std::string>& args) {
  std::string line = "attnsim";
  for (size_t i = 1; i < args.size(); ++i) line += " " + args[i];
  return line;
}

bool interrupted(const Child& child) {
  return child.signal == SIGINT || child.signal == SIGTERM || child.signal == SIGHUP;
}

std::string failure_reason(const Child& child) {
  if (child.signal) return fmt::format("killed by signal {} ({})", child.signal, strsignal(child.signal));
  if (!child.err_line.empty()) return child.err_line;
  return child.exit_status == 1 ? "a value check failed" : fmt::format("exit status {}", child.exit_status);
}

// Each unit's busy cycles for every schedule of an ok one-core point: compare does not report them, so the
// same trace is generated (gen, with compare's blocks and double buffering) and run timing-only. `cycles` is
// that run's total, which equals compare's when the trace is the same (tests/sweep checks a forward one; the
// CSV leaves the columns empty where they differ). False when interrupted.
bool add_unit_cycles(const Plan& plan, const Point& point, nlohmann::json& record, const fs::path& scratch,
                     std::atomic<pid_t>* running) {
  const nlohmann::json& c = record["compare"];
  if (plan.chip || record.value("status", "") != "ok") return true;
  std::vector<std::string> overrides = config_args(plan, point);
  overrides.erase(overrides.begin(), overrides.begin() + 4);  // attnsim config -c CONFIG
  const std::string trace = (scratch / "unit.trace").string(), stats = (scratch / "unit.json").string();
  for (const auto& s : c["schedules"]) {
    std::vector<std::string> gen = {plan.self,
                                    "gen",
                                    s["schedule"].get<std::string>(),
                                    "--n",
                                    c["n"].dump(),
                                    "--d",
                                    c["d"].dump(),
                                    "--block-q",
                                    s["block_q"].dump(),
                                    "--block-k",
                                    s["block_k"].dump(),
                                    "--double-buffer",
                                    "--dtype",
                                    c["dtype"].get<std::string>(),
                                    "--heads",
                                    std::to_string(c["heads"].get<int64_t>() * c["batch"].get<int64_t>()),
                                    "-o",
                                    trace};
    if (c["causal"].get<bool>()) gen.push_back("--causal");
    std::vector<std::string> run = {plan.self, "run",           "-c",           plan.config_path,
                                    trace,     "--timing-only", "--stats-json", stats};
    run.insert(run.end(), overrides.begin(), overrides.end());
    nlohmann::json& units = record["unit_busy_cycles"][s["schedule"].get<std::string>()];
    for (const auto& args : {gen, run}) {
      const Child child = run_child(args, scratch, running);
      if (interrupted(child)) return false;
      if (child.exit_status != 0) {
        units = {{"error", command_line(args) + ": " + failure_reason(child)}};
        break;
      }
    }
    if (units.contains("error")) continue;
    const auto j = nlohmann::json::parse(std::ifstream(stats), nullptr, false);
    if (j.is_discarded() || !j.contains("stats")) {
      units = {{"error", "attnsim run wrote no stats"}};
      continue;
    }
    for (const auto& [unit, figures] : j["stats"].items())
      if (figures.is_object() && figures.contains("busy_cycles"))
        units[unit] = figures["busy_cycles"]["value"];
    units["cycles"] = j["stats"]["sequencer"]["cycles"]["value"];
  }
  return true;
}

// One point's record, or nullopt when a child was interrupted (Ctrl-C): that point runs again on resume.
std::optional<nlohmann::json> run_point(const Plan& plan, const Point& point, const fs::path& scratch,
                                        std::atomic<pid_t>* running) {
  const auto start = Clock::now();
  nlohmann::json record = {{"point", point_json(point)}, {"sweep", plan.identity}};
  const std::vector<std::string> args = compare_args(plan, point);
  record["command"] = command_line(args);
  const Child config = run_child(config_args(plan, point), scratch, running);
  if (interrupted(config)) return std::nullopt;
  if (config.exit_status == 0) {
    auto effective = nlohmann::json::parse(config.out, nullptr, false);
    if (!effective.is_discarded())
      record["config"] = std::move(effective);  // a discarded value dumps as no JSON
  }
  const Child compare = config.exit_status == 0 ? run_child(args, scratch, running) : config;
  if (interrupted(compare)) return std::nullopt;
  nlohmann::json result = nlohmann::json::parse(compare.out, nullptr, false);
  if (!result.is_discarded() && result.is_object()) record["compare"] = result;
  const bool ok = compare.exit_status == 0 && record.contains("compare");
  record["status"] = ok ? "ok" : "failed";
  if (!ok) record["reason"] = compare.exit_status == 0 ? "compare printed no JSON" : failure_reason(compare);
  record["exit_status"] = compare.exit_status;
  if (plan.unit_cycles && !add_unit_cycles(plan, point, record, scratch, running)) return std::nullopt;
  record["host_seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
  return record;
}

}  // namespace

namespace {

std::string duration_text(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  return s >= 60 ? fmt::format("{}m{:02}s", s / 60, s % 60) : fmt::format("{}s", s);
}

std::string point_text(const Point& point) {
  std::string text;
  for (const auto& [key, value] : point) text += (text.empty() ? "" : " ") + key + "=" + value;
  return text.empty() ? "(no swept keys)" : text;
}

// On a terminal one line rewritten in place; otherwise (a log, CI, Slurm) one plain line per point.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), tty_(::isatty(STDERR_FILENO)), start_(Clock::now()) {}

  void finished(const Point& point, const nlohmann::json& record) {
    ++done_;
    const bool ok = record["status"] == "ok";
    if (!ok) ++failed_;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double eta = elapsed / double(done_) * double(total_ - done_);
    if (tty_) {  // a failure gets its own line above the progress line, which is then redrawn
      if (!ok)
        std::cerr << fmt::format("\r\33[Kpoint failed: {}: {}\n", point_text(point),
                                 record["reason"].get<std::string>());
      std::cerr << fmt::format("\r\33[Ksweep: {}/{} points, {} failed, ETA {}", done_, total_, failed_,
                               duration_text(eta))
                << std::flush;
      return;
    }
    std::cerr << fmt::format("point {}/{} {}: {}{} ({:.1f} s)\n", done_, total_, ok ? "done" : "failed",
                             point_text(point), ok ? "" : ": " + record["reason"].get<std::string>(),
                             record["host_seconds"].get<double>());
  }
  void end() {
    if (tty_ && done_) std::cerr << "\n";
  }

 private:
  size_t total_, done_ = 0, failed_ = 0;
  bool tty_;
  Clock::time_point start_;
};

// The whole line in one write() on an O_APPEND descriptor: an interrupted sweep leaves whole lines.
void append_line(int fd, const std::string& line, const fs::path& path) {
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot write " + path.string() + ": " + system_reason(errno));
    written += size_t(n);
  }
}

// Records already in OUT.jsonl. A last line without its newline (a kill mid-write) is cut off.
std::vector<nlohmann::json> load_records(const fs::path& path, const nlohmann::json& identity) {
  std::vector<nlohmann::json> records;
  if (!fs::exists(path)) return records;
  std::string text = read_text(path);
  const size_t whole = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (whole < text.size()) {
    std::cerr << fmt::format("sweep: {}: dropping an unfinished last line\n", path.string());
    fs::resize_file(path, whole);
    text.resize(whole);
  }
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.contains("point"))
      throw InputError(path.string(), {number, 1}, "not a sweep record");
    if (record["sweep"] != identity)
      throw InputError(path.string(), {number, 1},
                       "holds a different sweep (config, fixed options or swept keys: " +
                           record["sweep"].dump() + "); resume only the same command, or choose another -o");
    records.push_back(std::move(record));
  }
  return records;
}

int open_append(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path.string(), {}, "cannot open: " + system_reason(errno));
  return fd;
}

}  // namespace

namespace {

// Everything that can be checked before a file is touched: keys, conflicts, values, and the config itself
// (a child `attnsim config` with the first point's overrides names an unknown config key, with did-you-mean).
Plan make_plan(const SweepSpec& spec, const std::string& self, const std::vector<Point>& points) {
  if (spec.config_path.empty())
    throw InputError("attnsim sweep", {}, "no config: -c CONFIG (or config: in --spec)");
  if (spec.output.empty())
    throw InputError("attnsim sweep", {}, "no output: -o OUT writes OUT.csv and OUT.jsonl");
  Plan plan{self, spec.config_path, {}, {}, {}, false, spec.unit_cycles};
  std::set<std::string> swept;
  for (const auto& axis : spec.axes) {
    if (!swept.insert(axis.key).second) throw InputError("attnsim sweep", {}, axis.key + " is swept twice");
    plan.keys.push_back(axis.key);
  }
  std::set<std::string> fixed;
  for (const auto& [key, value] : spec.fixed) {
    if (swept.count(key)) throw InputError("attnsim sweep", {}, key + " is both swept and fixed");
    if (!fixed.insert(key).second && key != "schedule")
      throw InputError("attnsim sweep", {}, key + " is fixed twice");
    for (auto& a : option_args(key, value)) plan.fixed_args.push_back(std::move(a));
  }
  plan.identity = {{"config", spec.config_path}, {"fixed", plan.fixed_args}, {"keys", plan.keys}};
  const fs::path scratch = fs::temp_directory_path() / fmt::format("attnsim-sweep-check-{}", ::getpid());
  fs::create_directories(scratch);
  const Child check = run_child(config_args(plan, points.front()), scratch);
  fs::remove_all(scratch);
  if (check.exit_status != 0)
    throw InputError("attnsim sweep", {}, "checking the config: " + failure_reason(check));
  const auto config = nlohmann::json::parse(check.out, nullptr, false);
  plan.chip = config.is_object() && config.contains("chip") && !config["chip"].empty();
  return plan;
}

struct Outputs {
  fs::path csv, jsonl;
  int csv_fd = -1, jsonl_fd = -1;
  ~Outputs() {
    if (csv_fd >= 0) ::close(csv_fd);
    if (jsonl_fd >= 0) ::close(jsonl_fd);
  }
};

// A shard's record says where its point sits in the whole sweep, so that merge can put the points back in
// order and find a missing or doubled one; merge removes it again.
nlohmann::json shard_json(const SweepSpec& spec, size_t index, size_t points, bool chip) {
  return {
      {"index", spec.shard}, {"count", spec.shards}, {"point", index}, {"points", points}, {"chip", chip}};
}

// Runs `todo` on `jobs` workers; each finished point is appended to both files under one lock. `shard` gives
// each point's shard record (null: no shard).
size_t run_points(const Plan& plan, const std::vector<Point>& todo, const std::vector<nlohmann::json>& shard,
                  int jobs, Outputs& outputs) {
  const fs::path scratch = fs::temp_directory_path() / fmt::format("attnsim-sweep-{}", ::getpid());
  std::atomic<size_t> next{0};
  std::mutex lock;
  Progress progress(todo.size());
  size_t failed = 0;
  std::exception_ptr error;
  const int slots = std::min<int>(jobs, int(todo.size()));
  std::vector<std::atomic<pid_t>> running(size_t(std::max(slots, 0)));
  ForwardSignals forwarding(running);
  const auto worker = [&](int slot) {
    try {
      const fs::path dir = scratch / std::to_string(slot);
      fs::create_directories(dir);
      for (size_t i; !g_stop_signal && (i = next++) < todo.size();) {
        auto record = run_point(plan, todo[i], dir, &running[slot]);
        if (!record) continue;
        if (!shard[i].is_null()) (*record)["shard"] = shard[i];
        std::lock_guard guard(lock);
        append_line(outputs.jsonl_fd, json_text(*record) + "\n", outputs.jsonl);
        append_line(outputs.csv_fd, csv_rows(*record, plan.keys, plan.chip), outputs.csv);
        if ((*record)["status"] != "ok") ++failed;
        progress.finished(todo[i], *record);
      }
    } catch (...) {
      std::lock_guard guard(lock);
      error = std::current_exception();
      next = todo.size();  // stop handing out points
    }
  };
  std::vector<std::thread> workers;
  for (int slot = 0; slot < slots; ++slot) workers.emplace_back(worker, slot);
  for (auto& w : workers) w.join();
  progress.end();
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  if (error) std::rethrow_exception(error);
  return failed;
}

}  // namespace

std::vector<CommandResult> run_commands(const std::vector<std::vector<std::string>>& commands, int jobs,
                                        const std::function<void(size_t, const CommandResult&)>& finished) {
  std::vector<CommandResult> results(commands.size());
  const fs::path scratch = fs::temp_directory_path() / fmt::format("attnsim-commands-{}", ::getpid());
  std::atomic<size_t> next{0};
  std::mutex lock;
  std::exception_ptr error;
  const int slots = std::max(1, std::min<int>(jobs, int(commands.size())));
  std::vector<std::atomic<pid_t>> running(static_cast<size_t>(slots));
  ForwardSignals forwarding(running);
  const auto worker = [&](int slot) {
    try {
      const fs::path dir = scratch / std::to_string(slot);
      fs::create_directories(dir);
      for (size_t i; !g_stop_signal && (i = next++) < commands.size();) {
        const Child child = run_child(commands[i], dir, &running[slot]);
        std::lock_guard guard(lock);
        results[i] = {child.exit_status, child.signal, child.out, child.err_line};
        if (finished) finished(i, results[i]);
      }
    } catch (...) {
      std::lock_guard guard(lock);
      error = std::current_exception();
      next = commands.size();
    }
  };
  std::vector<std::thread> workers;
  for (int slot = 0; slot < slots; ++slot) workers.emplace_back(worker, slot);
  for (auto& w : workers) w.join();
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  if (error) std::rethrow_exception(error);
  return results;
}

std::pair<int, int> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const auto whole = [](const std::string& s) {
    return !s.empty() && s.size() < 9 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (slash != std::string::npos && whole(text.substr(0, slash)) && whole(text.substr(slash + 1))) {
    const int k = std::stoi(text.substr(0, slash)), n = std::stoi(text.substr(slash + 1));
    if (k >= 1 && k <= n) return {k, n};
  }
  throw InputError("attnsim sweep", {},
                   "--shard " + text + ": expected K/N with 1 <= K <= N (Slurm: --array=1-N, K = task id)");
}

std::string sweep_output_stem(const std::string& output, int shard, int shards) {
  fs::path path(output);
  if (path.extension() == ".csv" || path.extension() == ".jsonl") path.replace_extension();
  return path.string() + (shards ? fmt::format(".shard-{}-of-{}", shard, shards) : "");
}

void check_sweep(const SweepSpec& spec, const std::string& self) {
  make_plan(spec, self, sweep_points(spec.axes));
}

int run_sweep(const SweepSpec& spec, const std::string& self) {
  const std::vector<Point> all = sweep_points(spec.axes);
  const Plan plan = make_plan(spec, self, all);
  // A shard takes every shards-th point: round robin rather than blocks, so the slow end of a swept range
  // (the largest N) is spread over the shards instead of landing on the last one.
  std::vector<Point> points;
  std::vector<nlohmann::json> shard_of;  // per point of `points`
  for (size_t i = 0; i < all.size(); ++i) {
    if (spec.shards && int(i % size_t(spec.shards)) != spec.shard - 1) continue;
    points.push_back(all[i]);
    shard_of.push_back(spec.shards ? shard_json(spec, i, all.size(), plan.chip) : nlohmann::json());
  }
  const std::string stem = sweep_output_stem(spec.output, spec.shard, spec.shards);
  Outputs outputs{stem + ".csv", stem + ".jsonl"};
  std::vector<nlohmann::json> records = load_records(outputs.jsonl, plan.identity);
  // Adding values to a swept key renumbers the points, and so which shard holds which: a shard's records
  // must still sit where they were, or merge would mix two partitions.
  std::map<std::string, size_t> position;
  if (spec.shards)
    for (size_t i = 0; i < points.size(); ++i) position[point_json(points[i]).dump()] = i;
  for (const auto& r : records) {
    if (!spec.shards && !r.contains("shard")) continue;
    const auto at = position.find(r["point"].dump());
    const nlohmann::json expected =
        at == position.end() ? nlohmann::json("not in this shard") : shard_of[at->second];
    if (r.value("shard", nlohmann::json()) != expected)
      throw InputError(outputs.jsonl.string(), {},
                       "holds point " + r["point"].dump() + " as " +
                           r.value("shard", nlohmann::json()).dump() + ", this sweep has it as " +
                           expected.dump() + " (the swept values or --shard changed); choose another -o");
  }
  if (spec.retry_failed) {  // failed points leave the files and run again
    std::erase_if(records, [](const nlohmann::json& r) { return r["status"] != "ok"; });
    std::string kept;
    for (const auto& r : records) kept += json_text(r) + "\n";
    if (fs::exists(outputs.jsonl)) write_file_atomically(outputs.jsonl.string(), kept);
  }
  std::set<std::string> done;
  size_t failed_before = 0;
  std::string csv = csv_header(plan.keys, plan.chip);
  for (const auto& r : records) {
    done.insert(r["point"].dump());
    failed_before += r["status"] != "ok";
    csv += csv_rows(r, plan.keys, plan.chip);
  }
  std::vector<Point> todo;
  std::vector<nlohmann::json> todo_shard;
  for (size_t i = 0; i < points.size(); ++i)
    if (!done.count(point_json(points[i]).dump())) {
      todo.push_back(points[i]);
      todo_shard.push_back(shard_of[i]);
    }
  write_file_atomically(outputs.csv.string(), csv);  // rebuilt from the records: the CSV never drifts
  outputs.jsonl_fd = open_append(outputs.jsonl);
  outputs.csv_fd = open_append(outputs.csv);
  const int jobs = spec.jobs > 0 ? spec.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  std::cerr << fmt::format(
      "sweep: {}{} points, {} to run, {} skipped (already in {}), {} jobs\n",
      spec.shards ? fmt::format("shard {}/{} of {} points: ", spec.shard, spec.shards, all.size()) : "",
      points.size(), todo.size(), points.size() - todo.size(), outputs.jsonl.string(), jobs);
  const size_t failed = run_points(plan, todo, todo_shard, jobs, outputs);
  if (const int signal = g_stop_signal) {
    std::cerr << fmt::format(
        "sweep: interrupted ({}); the finished points are in {}; rerun the same command "
        "to resume\n",
        strsignal(signal), outputs.jsonl.string());
    return 128 + signal;
  }
  std::cerr << fmt::format("sweep: {} run, {} failed ({} failed before); wrote {} and {}\n", todo.size(),
                           failed, failed_before, outputs.csv.string(), outputs.jsonl.string());
  return failed + failed_before ? 1 : 0;
}

}  // namespace attnsim
