#include "sim/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "isa/diagnostics.h"
#include "sim/compare.h"
#include "sim/config.h"
#include "sim/sweep.h"

namespace attnsim {

namespace {

uint64_t sum(const nlohmann::json& j, const char* a, const char* b) {
  return (j.contains(a) ? j[a].get<uint64_t>() : 0) + (j.contains(b) ? j[b].get<uint64_t>() : 0);
}

// The compare child that simulates one candidate: timing-only (values do not change bytes or cycles).
std::vector<std::string> candidate_args(const PlanSearchOptions& o, const std::string& self,
                                        const PlanCandidate& c) {
  const CompareOptions& k = o.compare;
  std::vector<std::string> args = {self,         "compare",
                                   "-c",         k.config_path,
                                   "--N",        std::to_string(k.n),
                                   "--d",        std::to_string(k.d),
                                   "--heads",    std::to_string(k.heads),
                                   "--batch",    std::to_string(k.batch),
                                   "--dtype",    std::string(dtype_name(k.dtype)),
                                   "--schedule", c.schedule,
                                   "--block-q",  std::to_string(c.block_q),
                                   "--block-k",  std::to_string(c.block_k),
                                   "--values",   "off",
                                   "--progress", "off",
                                   "--json"};
  if (k.causal) args.push_back("--causal");
  if (k.backward) args.push_back("--backward");
  if (!k.double_buffer) args.push_back("--single-buffer");
  if (c.keys_descending) args.push_back("--keys-descending");
  for (const auto& p : k.overrides) args.insert(args.end(), {"-p", p});
  return args;
}

// --objective energy: a whole chip whose config gives per-access energies (compare reports energy there).
void require_energy(const CompareOptions& k, bool chip) {
  if (!chip)
    throw InputError(
        k.config_path, {},
        "--objective energy needs a whole-chip config (a chip: section); run --stats-json reports "
        "one core's energy");
  const MachineConfig config = load_config(k.config_path, k.overrides);
  if (!config.root["energy"])
    throw InputError(k.config_path, {}, "--objective energy needs an energy: section (docs/energy.md)");
}

std::string loop_order(const PlanCandidate& c) {
  if (c.schedule == "flash1") return "K/V outer";
  if (c.schedule == "flash2") return c.keys_descending ? "Q outer, keys down" : "Q outer, keys up";
  return "-";
}

std::string objective_title(const std::string& objective, bool chip) {
  if (objective == "dram") return "DRAM bytes (read + written)";
  if (objective == "sm_l2") return chip ? "SM<->L2 bytes (read + written)" : "HBM bytes (read + written)";
  if (objective == "energy") return "dynamic energy (whole chip)";
  return "cycles";
}

}  // namespace

double objective_value(const PlanResult& result, const PlanCandidate& c) {
  if (result.objective == "dram") return double(c.dram_bytes.value_or(0));
  if (result.objective == "sm_l2") return double(c.sm_l2_bytes);
  if (result.objective == "energy") return c.energy_pj.value_or(0);
  return double(c.cycles);
}

PlanResult search_plans(const PlanSearchOptions& o, const std::string& self) {
  const auto started = std::chrono::steady_clock::now();
  PlanSearchOptions options = o;
  CompareOptions& k = options.compare;
  check_compare_options(k, "attnsim plan");
  if (k.block > 0 || k.block_q > 0 || k.block_k > 0)
    throw InputError("attnsim plan", {}, "plan chooses the blocks: leave out --block, --block-q, --block-k");
  // The schedules with a choice of blocks that matter most: FlashAttention's two loop orders.
  if (k.schedules.empty())
    k.schedules =
        k.backward ? std::vector<std::string>{"flash2-bwd"} : std::vector<std::string>{"flash1", "flash2"};
  const BlockSpace space = block_space(k);
  PlanResult result;
  result.chip = space.chip;
  result.objective = options.objective.empty() ? (space.chip ? "dram" : "sm_l2") : options.objective;
  if (result.objective != "dram" && result.objective != "sm_l2" && result.objective != "cycles" &&
      result.objective != "energy")
    throw InputError("attnsim plan", {}, "--objective must be dram, sm_l2, cycles or energy");
  if (result.objective == "energy") require_energy(k, space.chip);
  if (result.objective == "dram" && !space.chip)
    throw InputError(k.config_path, {},
                     "--objective dram needs a whole-chip config (a chip: section); on one core the HBM "
                     "bytes are the SM<->L2 traffic: --objective sm_l2 or cycles");
  // Candidates: every fitting pair of the hardware rule's sizes, and both rules' own choices (the paper's
  // are not powers of two), each once, in both key orders for a causal flash2.
  std::map<std::tuple<std::string, bool, int64_t, int64_t>, size_t> index;
  const auto add = [&](const std::string& schedule, bool descending, int64_t q, int64_t kk,
                       const std::string& rule) {
    q = std::min(q, k.n);
    kk = std::min(kk, k.n);
    const auto key = std::make_tuple(schedule, descending, q, kk);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, result.candidates.size()).first;
      result.candidates.push_back({schedule, descending, q, kk, {}, false, "", 0, {}, 0, 0, {}});
    }
    auto& rules = result.candidates[it->second].rules;
    if (!rule.empty() && std::find(rules.begin(), rules.end(), rule) == rules.end()) rules.push_back(rule);
  };
  for (const auto& s : space.schedules)
    for (bool descending : {false, true}) {
      if (descending && !(s.name == "flash2" && k.causal)) continue;
      for (const auto& [q, kk] : s.fitting) add(s.name, descending, q, kk, "");
      if (!descending)
        for (const auto& rule : s.rules)
          if (rule.fits) add(s.name, false, rule.block_q, rule.block_k, rule.rule);
    }
  if (result.candidates.empty())
    throw InputError(k.config_path, {}, "no block size of either rule fits the SRAM for these schedules");
  std::vector<std::vector<std::string>> commands;
  for (const auto& c : result.candidates) commands.push_back(candidate_args(options, self, c));
  result.jobs = options.jobs > 0 ? options.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  if (options.progress)
    std::cerr << fmt::format("plan: {} candidates, {} jobs\n", commands.size(), result.jobs);
  size_t done = 0;
  const auto results = run_commands(commands, result.jobs, [&](size_t i, const CommandResult& r) {
    ++done;
    if (options.progress)
      std::cerr << fmt::format(
          "plan: {}/{} {} {}x{}{}: {}\n", done, commands.size(), result.candidates[i].schedule,
          result.candidates[i].block_q, result.candidates[i].block_k,
          result.candidates[i].keys_descending ? " keys down" : "", r.exit_status == 0 ? "done" : "failed");
  });
  for (size_t i = 0; i < results.size(); ++i) {
    PlanCandidate& c = result.candidates[i];
    const CommandResult& r = results[i];
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_status != 0 || j.is_discarded() || !j.contains("schedules") || j["schedules"].empty()) {
      c.reason = r.signal             ? fmt::format("killed by signal {}", r.signal)
                 : r.err_line.empty() ? fmt::format("exit status {}", r.exit_status)
                                      : r.err_line;
      continue;
    }
    const nlohmann::json& s = j["schedules"][0];
    c.ok = true;
    c.cycles = s["cycles"].get<uint64_t>();
    c.seconds = s["simulated_seconds"].get<double>();
    if (s.contains("whole_chip")) {
      c.sm_l2_bytes = sum(s, "sm_l2_bytes_read", "sm_l2_bytes_written");
      c.dram_bytes = sum(s["whole_chip"], "dram_bytes_read", "dram_bytes_written");
      if (s["whole_chip"].contains("energy"))
        c.energy_pj = s["whole_chip"]["energy"]["total_pj"].get<double>();
    } else {
      c.sm_l2_bytes = sum(s, "hbm_bytes_read", "hbm_bytes_written");
    }
  }
  // A stable order for equal figures: cycles, then the candidate's own order.
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [&](const PlanCandidate& a, const PlanCandidate& b) {
                     if (a.ok != b.ok) return a.ok;
                     if (!a.ok) return false;
                     const double va = objective_value(result, a), vb = objective_value(result, b);
                     if (va != vb) return va < vb;
                     return a.cycles < b.cycles;
                   });
  result.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

void print_plan(std::ostream& out, const PlanSearchOptions& o, const PlanResult& r) {
  const CompareOptions& k = o.compare;
  size_t ok = 0;
  for (const auto& c : r.candidates) ok += c.ok;
  out << fmt::format(
      "plan: N = {}, d = {}, batch x heads = {} x {}, {}, {}; objective: least {}\n"
      "{} candidates simulated ({} ran, {} did not), {} jobs, {:.1f} s\n",
      k.n, k.d, k.batch, k.heads, k.causal ? "causal" : "not causal", dtype_name(k.dtype),
      objective_title(r.objective, r.chip), r.candidates.size(), ok, r.candidates.size() - ok, r.jobs,
      r.host_seconds);
  out << fmt::format("{:>4} {:10} {:>9} {:19} {:>11} {:>11} {:>12} {:>10} {:>10} {:>8}  {}\n", "rank",
                     "schedule", "Br x Bc", "loop order", r.chip ? "DRAM" : "-", r.chip ? "SM<->L2" : "HBM",
                     "cycles", "time us", "energy uJ", "vs best", "chosen by");
  const double best = ok ? objective_value(r, r.candidates.front()) : 0;
  for (size_t i = 0; i < r.candidates.size() && i < o.top; ++i) {
    const PlanCandidate& c = r.candidates[i];
    if (!c.ok) break;
    std::string rules;
    for (const auto& rule : c.rules) rules += (rules.empty() ? "" : ", ") + rule + " rule";
    const double v = objective_value(r, c);
    out << fmt::format("{:>4} {:10} {:>9} {:19} {:>11} {:>11} {:>12} {:>10.1f} {:>10} {:>8.3f}  {}\n", i + 1,
                       c.schedule, fmt::format("{}x{}", c.block_q, c.block_k), loop_order(c),
                       c.dram_bytes ? human_bytes(double(*c.dram_bytes)) : std::string("-"),
                       human_bytes(double(c.sm_l2_bytes)), c.cycles, c.seconds * 1e6,
                       c.energy_pj ? fmt::format("{:.4g}", *c.energy_pj * 1e-6) : std::string("-"),
                       best > 0 ? v / best : 1.0, rules);
  }
  // Where the rules' own choices landed, when below the printed rows.
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const PlanCandidate& c = r.candidates[i];
    if (!c.ok || i < o.top || c.rules.empty()) continue;
    for (const auto& rule : c.rules)
      out << fmt::format("the {} rule's {} {}x{} ranks {} of {} ({:.3f} x the best)\n", rule, c.schedule,
                         c.block_q, c.block_k, i + 1, ok, best > 0 ? objective_value(r, c) / best : 1.0);
  }
  for (const auto& c : r.candidates)
    if (!c.ok) out << fmt::format("did not run: {} {}x{}: {}\n", c.schedule, c.block_q, c.block_k, c.reason);
}

}  // namespace attnsim
