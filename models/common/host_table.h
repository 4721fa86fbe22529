// A fixed-size table of plain values in host memory the kernel may back with 2 MiB pages
// (madvise(MADV_HUGEPAGE) where transparent huge pages are "madvise"): the L2's tags and line states are
// megabytes searched at random, and in 4 KiB pages most searches would also miss the host's TLB.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace attnsim {

template <typename T>
class HostTable {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  HostTable() = default;
  explicit HostTable(size_t size) : size_(size) {
    constexpr size_t kHugePage = size_t{2} << 20;
    const size_t bytes = (std::max<size_t>(size, 1) * sizeof(T) + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = std::aligned_alloc(kHugePage, bytes);
    if (!memory) throw std::bad_alloc();
    madvise(memory, bytes, MADV_HUGEPAGE);  // a hint: without it the table still works, in small pages
    data_.reset(static_cast<T*>(memory));
    std::uninitialized_fill_n(data_.get(), size_, T{});
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0;
};

}  // namespace attnsim
