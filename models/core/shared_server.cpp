#include "models/core/shared_server.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

namespace attnsim {

namespace {

constexpr double kDone = 1e-9;  // unit cycles left below which a job is done

uint64_t to_cycle(double t) {
  return static_cast<uint64_t>(std::llround(t));
}

}  // namespace

// Each owner's jobs in arrival order, into the first queue_count_ of queues_ (indices into jobs_).
void SharedServer::group() const {
  queue_count_ = 0;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    size_t k = 0;
    while (k < queue_count_ && queues_[k].owner != jobs_[i].owner) ++k;
    if (k == queue_count_) {
      if (k == queues_.size()) queues_.emplace_back();
      queues_[k].owner = jobs_[i].owner;
      queues_[k].age = jobs_[i].age;
      queues_[k].jobs.clear();
      ++queue_count_;
    }
    queues_[k].jobs.push_back(i);
  }
}

// Serves the heads of the owners' queues from `now` until `to` (or until all are done), sharing the unit
// among the owners that have work by their weights; `left` holds every job's work left and `on_done(i, t)`
// hears of each job finished at t. Returns the time reached.
template <typename OnDone>
double SharedServer::run_queues(std::vector<double>& left, double now, double to, OnDone on_done) const {
  const auto queues = std::span(queues_).first(queue_count_);
  size_t active = 0;
  for (Queue& q : queues) {
    q.head = 0;
    active += q.jobs.empty() ? 0 : 1;
  }
  while (active > 0 && now < to) {
    double total = 0;
    for (Queue& q : queues) {
      if (q.head >= q.jobs.size()) continue;
      q.weight = 1;
      for (const Queue& other : queues)
        if (other.head < other.jobs.size() && other.age > q.age) q.weight *= older_weight_;
      total += q.weight;
    }
    double step = std::numeric_limits<double>::infinity();  // until the first head is done
    const Queue* first = nullptr;
    for (const Queue& q : queues)
      if (q.head < q.jobs.size() && left[q.jobs[q.head]] * total / q.weight < step)
        step = left[q.jobs[q.head]] * total / q.weight, first = &q;
    const bool ends = step <= to - now;
    const double span = ends ? step : to - now;
    now = ends ? now + step : to;
    for (Queue& q : queues) {
      if (q.head >= q.jobs.size()) continue;
      double& l = left[q.jobs[q.head]];
      l -= span * q.weight / total;
      if (!(ends && &q == first) && l > kDone) continue;
      l = 0;
      on_done(q.jobs[q.head], now);
      if (++q.head == q.jobs.size()) --active;
    }
  }
  return now;
}

void SharedServer::serve(double to) {
  if (to <= now_ || jobs_.empty()) {
    now_ = std::max(now_, to);
    return;
  }
  group();
  left_.resize(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); ++i) left_[i] = jobs_[i].left;
  now_ = std::max(run_queues(left_, now_, to, [](size_t, double) {}), to);
  size_t kept = 0;
  for (size_t i = 0; i < jobs_.size(); ++i)
    if (left_[i] > kDone) {
      jobs_[kept] = jobs_[i];
      jobs_[kept++].left = left_[i];
    }
  jobs_.resize(kept);
}

void SharedServer::project() {
  moved_.clear();
  group();
  left_.resize(jobs_.size());
  for (size_t i = 0; i < jobs_.size(); ++i) left_[i] = jobs_[i].left;
  run_queues(left_, now_, std::numeric_limits<double>::infinity(), [this](size_t i, double t) {
    Job& j = jobs_[i];
    const uint64_t end = to_cycle(t);
    if (end > j.end && j.id != 0 && j.end != 0) moved_.emplace_back(j.id, end);
    j.end = end;
  });
}

uint64_t SharedServer::add(uint64_t id, const void* owner, uint64_t age, uint64_t at, double work) {
  serve(static_cast<double>(at));
  moved_.clear();
  if (work <= kDone) return std::max(at, owner_free(owner));
  const uint64_t own_free = owner_free(owner);
  jobs_.push_back({id, owner, age, work, 0});
  // Alone, or the only owner: first come first served, nothing to project.
  const bool alone =
      std::all_of(jobs_.begin(), jobs_.end(), [owner](const Job& j) { return j.owner == owner; });
  if (alone) {
    const double from = std::max(now_, static_cast<double>(own_free));
    jobs_.back().end = to_cycle(jobs_.size() == 1 ? now_ + work : from + work);
    return jobs_.back().end;
  }
  project();
  return jobs_.back().end;
}

bool SharedServer::append_behind(double work) {
  moved_.clear();
  if (jobs_.empty() || work <= kDone) return false;
  group();
  const double share = work / static_cast<double>(queue_count_);
  for (const Queue& q : std::span(queues_).first(queue_count_)) {
    Job& last = jobs_[q.jobs.back()];
    if (last.id == 0) {
      last.left += share;  // one such tail an owner, however many add to it
      continue;
    }
    jobs_.push_back({0, last.owner, last.age, share, 0});
  }
  project();
  return true;
}

uint64_t SharedServer::owner_free(const void* owner) const {
  uint64_t free = 0;
  for (const Job& j : jobs_)
    if (j.owner == owner) free = std::max(free, j.end);
  return free;
}

uint64_t SharedServer::busy_until() const {
  uint64_t until = 0;
  for (const Job& j : jobs_) until = std::max(until, j.end);
  return until;
}

// The unit works whenever it has work (each owner's head at its share): what is left falls by one a cycle.
double SharedServer::work_left_at(uint64_t at) const {
  double left = 0;
  for (const Job& j : jobs_) left += j.left;
  return std::max(0.0, left - std::max(0.0, static_cast<double>(at) - now_));
}

void SharedServer::advance(uint64_t to) {
  serve(static_cast<double>(to));
}

void SharedServer::clear() {
  now_ = 0;
  jobs_.clear();
  moved_.clear();
}

}  // namespace attnsim
