// A unit that several thread blocks' instructions use at once: processor sharing among blocks, first come
// first served within one. A GPU's warp schedulers interleave the warp instructions of every resident block
// cycle by cycle, so two blocks' tile instructions that overlap in time both progress, each at part of the
// unit's rate; a block's own instructions on one unit keep their program order. Each job is `work` cycles
// of the whole unit; while n blocks have work the unit serves each one's oldest job at 1/n of its rate.
//
// Unlike a busy-until time, this is continuous in the arrival time: a job that arrives a cycle later moves
// every end by about a cycle, where first come first served hands the whole unit to whoever came first.
// Alone, a block's jobs end exactly where first come first served ends them (integer work, integer starts).
//
// Arrivals must come in time order (a core executes its blocks' instructions in start order); an earlier
// one is served from the latest arrival's time. An arrival can only make earlier jobs end later: moved()
// lists them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace attnsim {

class SharedServer {
 public:
  // Each owner's share grows `weight` times with each owner younger than it that has work (1: equal
  // shares). An owner's age: smaller is older (its block was placed earlier).
  void set_older_weight(double weight) { older_weight_ = weight; }
  // Adds job `id` of `owner` (its block, of `age`), `work` unit cycles, arriving at `at`; returns its end.
  uint64_t add(uint64_t id, const void* owner, uint64_t age, uint64_t at, double work);
  // Adds `work` in equal parts behind each owner's last job: cycles the unit loses (a product's tensor
  // cores yielding to other instructions), after what each block has booked, as a lone block's next
  // product starts that much later. Returns false if the unit holds no job.
  bool append_behind(double work);
  // The jobs whose end moved with the last add or append_behind: (id, new end).
  const std::vector<std::pair<uint64_t, uint64_t>>& moved() const { return moved_; }
  // When `owner`'s jobs end (its next one queues behind them); 0 when it has none.
  uint64_t owner_free(const void* owner) const;
  uint64_t busy_until() const;  // when the last job ends; 0 when there is none
  // The unit cycles of work not yet done at `at` (no later arrivals).
  double work_left_at(uint64_t at) const;
  void advance(uint64_t to);  // serves the jobs up to `to` (no arrival will come earlier)
  void clear();

 private:
  struct Job {
    uint64_t id = 0;
    const void* owner = nullptr;
    uint64_t age = 0;
    double left = 0;   // unit cycles
    uint64_t end = 0;  // projected
  };
  struct Queue {
    const void* owner = nullptr;
    uint64_t age = 0;
    std::vector<size_t> jobs;  // indices into jobs_, in arrival order
    size_t head = 0;
    double weight = 1;
  };
  void group() const;
  template <typename OnDone>
  double run_queues(std::vector<double>& left, double now, double to, OnDone on_done) const;
  void serve(double to);  // from now_ to `to`, dropping the jobs done
  void project();         // every job's end with no more arrivals; moved_ gets those that moved

  double older_weight_ = 1;
  double now_ = 0;
  std::vector<Job> jobs_;
  std::vector<std::pair<uint64_t, uint64_t>> moved_;
  mutable std::vector<Queue> queues_;  // scratch, kept to spare allocations: the first queue_count_
  mutable size_t queue_count_ = 0;
  std::vector<double> left_;
};

}  // namespace attnsim
