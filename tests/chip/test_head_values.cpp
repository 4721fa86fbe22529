// What `compare` rests on when it checks the values of a many-head problem on its first head alone
// (CompareOptions::value_heads): heads share no data and run the same program, so the first head's outputs
// in a whole run of several heads are the outputs of that head simulated alone (the forward's to the bit,
// the backward's up to the order in which its atomic adds land). The oracle is the run of every head; a
// generator whose inputs, blocks or reductions mixed heads would fail here.
#include <gtest/gtest.h>

#include <functional>

#include "sim/compare.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "traces/attention_backward.h"
#include "traces/attention_forward.h"
#include "traces/stream.h"

namespace attnsim {
namespace {

// One machine per process (SystemC elaborates once), loaded again for every run.
Machine& whole_h100() {
  static Machine machine(load_config(std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml", {}));
  return machine;
}

// The named tensors' values after a run with values (each [heads][n][d], head after head).
std::vector<std::vector<double>> outputs(const std::function<isa::Program()>& generate,
                                         const std::vector<std::string>& names) {
  Machine& machine = whole_h100();
  const isa::Program program = traces::stream_program(generate, 1 << 16, true);
  machine.load(program, false, false);
  machine.run();
  std::vector<std::vector<double>> out;
  for (const std::string& name : names)
    out.push_back(machine.chip()->tensor_values(program.find_tensor(name)));
  return out;
}

std::vector<double> first_head(const std::vector<double>& values, int64_t heads) {
  return {values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / size_t(heads))};
}

// A schedule's name as a test name ("naive-safe" -> "naivesafe").
const auto schedule_test_name = [](const auto& info) {
  std::string name(traces::schedule_name(info.param));
  std::erase(name, '-');
  return name;
};

class ForwardHeads : public testing::TestWithParam<traces::ForwardSchedule> {};

TEST_P(ForwardHeads, TheFirstHeadsOutputIsTheOneHeadRunsToTheBit) {
  traces::ForwardShape shape;
  shape.n = 256;
  shape.d = 64;
  shape.block_q = shape.block_k = 64;
  shape.causal = true;
  shape.heads = 3;
  const auto all = outputs([&] { return traces::forward_program(GetParam(), shape); }, {"O"});
  shape.heads = 1;
  const auto alone = outputs([&] { return traces::forward_program(GetParam(), shape); }, {"O"});
  ASSERT_EQ(all[0].size(), 3 * alone[0].size());
  EXPECT_EQ(first_head(all[0], 3), alone[0]);
  EXPECT_NE(first_head(all[0], 3),
            std::vector<double>(all[0].end() - std::ptrdiff_t(alone[0].size()), all[0].end()))
      << "the heads' inputs differ, so their outputs must";
}

INSTANTIATE_TEST_SUITE_P(Schedules, ForwardHeads, testing::ValuesIn(traces::all_forward_schedules()),
                         schedule_test_name);

class BackwardHeads : public testing::TestWithParam<traces::BackwardSchedule> {};

TEST_P(BackwardHeads, TheFirstHeadsGradientsAreTheOneHeadRunsUpToTheOrderOfTheirAtomicAdds) {
  traces::BackwardShape shape;
  shape.n = 256;
  shape.d = 64;
  shape.block_q = shape.block_k = 64;
  shape.heads = 3;
  const std::vector<std::string> names = {"dQ", "dK", "dV"};
  const auto all = outputs([&] { return traces::backward_program(GetParam(), shape); }, names);
  shape.heads = 1;
  const auto alone = outputs([&] { return traces::backward_program(GetParam(), shape); }, names);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::vector<double> head = first_head(all[i], 3);
    ASSERT_EQ(head.size(), alone[i].size());
    double diff = 0, scale = 0;
    for (size_t e = 0; e < head.size(); ++e) {
      diff = std::max(diff, std::abs(head[e] - alone[i][e]));
      scale = std::max(scale, std::abs(alone[i][e]));
    }
    // Gradients summed by atomic adds land in the order the blocks reach them, which the other heads'
    // blocks change: the sums may differ in f32 rounding (1.2e-7 seen at a scale of 2.5), never more.
    EXPECT_LE(diff, 1e-6 * scale) << names[i];
    EXPECT_GT(scale, 0.1) << names[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, BackwardHeads,
                         testing::Values(traces::BackwardSchedule::Flash2,
                                         traces::BackwardSchedule::Flash2NoD,
                                         traces::BackwardSchedule::Naive),
                         schedule_test_name);

// The auto rule: every head up to 8192^2 scores in all, then the first head alone up to N = 8192, then none.
TEST(ValueHeads, AutoChecksEveryHeadWhileTheScoresFitThenTheFirstThenNone) {
  CompareOptions o;
  o.n = 4096;
  o.heads = 4;
  EXPECT_EQ(o.value_heads(), 4);  // 4 x 4096^2 = 8192^2
  EXPECT_FALSE(o.values_sampled());
  o.heads = 16;
  EXPECT_EQ(o.value_heads(), 1);
  EXPECT_TRUE(o.values_sampled());
  o.batch = 2;
  o.heads = 2;
  o.n = 8192;
  EXPECT_EQ(o.value_heads(), 1);
  o.n = 16384;
  o.batch = o.heads = 1;
  EXPECT_EQ(o.value_heads(), 0);
  o.values = CompareOptions::Values::On;
  o.heads = 16;
  EXPECT_EQ(o.value_heads(), 16);
  o.values = CompareOptions::Values::Off;
  o.n = 64;
  EXPECT_EQ(o.value_heads(), 0);
}

}  // namespace
}  // namespace attnsim
