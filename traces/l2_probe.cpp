#include "traces/l2_probe.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "models/common/splitmix.h"
#include "traces/builder.h"

namespace attnsim::traces {

namespace {

constexpr int64_t kRowFloats = 1024;  // one thread block of 1024 threads loading 16 bytes each
constexpr int64_t kChunkRows = 4;
constexpr uint64_t kChunkBytes = static_cast<uint64_t>(kRowFloats * kChunkRows) * 4;
static_assert(kChunkBytes == kProbeChunkBytes);

}  // namespace

std::optional<ProbeMode> find_probe_mode(std::string_view name) {
  for (int m = 0; m <= static_cast<int>(ProbeMode::ReadBetween); ++m)
    if (probe_mode_name(static_cast<ProbeMode>(m)) == name) return static_cast<ProbeMode>(m);
  return std::nullopt;
}

std::string_view probe_mode_name(ProbeMode mode) {
  switch (mode) {
    case ProbeMode::Single:
      return "single";
    case ProbeMode::Shared:
      return "shared";
    case ProbeMode::ReadFence:
      return "rfence";
    case ProbeMode::ReadFenceOther:
      return "rfenceother";
    case ProbeMode::ReadFenceAsync:
      return "rfenceasync";
    case ProbeMode::ReadFenceWeak:
      return "rfenceweak";
    case ProbeMode::ReadFenceOtherAsync:
      return "rfenceotherasync";
    case ProbeMode::ReadFenceOtherWeak:
      return "rfenceotherweak";
    case ProbeMode::Spread:
      return "spread";
    case ProbeMode::Private:
      return "private";
    case ProbeMode::WritePrivate:
      return "wprivate";
    case ProbeMode::WriteSingle:
      return "wsingle";
    case ProbeMode::Rmw:
      return "rmw";
    case ProbeMode::RmwSpread:
      return "rmwspread";
    case ProbeMode::RmwHalf:
      return "rmwhalf";
    case ProbeMode::RmwLock:
      return "rmwlock";
    case ProbeMode::RmwFence:
      return "rmwfence";
    case ProbeMode::WriteThenRead:
      return "wthenread";
    case ProbeMode::ReadThenRead:
      return "rthenread";
    case ProbeMode::Scatter:
      return "scatter";
    case ProbeMode::Retouch:
      return "retouch";
    case ProbeMode::Heads:
      return "heads";
    case ProbeMode::Copies:
      return "copies";
    case ProbeMode::Stale:
      return "stale";
    case ProbeMode::WriteBetween:
      return "wbetween";
    case ProbeMode::ReadBetween:
      return "rbetween";
  }
  return "?";
}

uint64_t scattered_line(uint64_t i) {
  return 8 * i + splitmix64_mix(i) % 8;
}

namespace {

void check_passes(int64_t passes) {
  if (passes < 1 || passes > 1'000'000) throw std::invalid_argument("l2 probe: passes must be 1..10^6");
}

void check_counts(int64_t passes, int64_t blocks) {
  check_passes(passes);
  if (blocks < 1 || blocks > 1'000'000) throw std::invalid_argument("l2 probe: blocks must be 1..10^6");
}

// One block, 1,024 threads: each step loads 128 line indices (512 bytes of `lines`), then the 128 lines.
isa::Program scatter_probe(const ProbeShape& s) {
  const int64_t count = static_cast<int64_t>(s.bytes / 128 / 128 * 128);
  if (count < 128) throw std::invalid_argument("l2 probe: scatter needs at least 16 KiB");
  check_passes(s.passes);
  Builder b("<l2-probe>");
  const int x = b.tensor("X", 8 * count, 32, Dtype::F32, false, 0);
  const int lines = b.tensor("lines", count / 128, 128, Dtype::F32, false, 0);  // u32 indices
  const int index = b.buffer("I", 1, 128, Dtype::F32);
  const int buffer = b.buffer("B", 1, 32, Dtype::F32);
  const int kernel = b.kernel("l2_probe", {1, 1, 1});
  b.begin_block(kernel, {0, 0, 0});
  for (int64_t pass = 0; pass < s.passes; ++pass)
    for (int64_t step = 0; step < count / 128; ++step) {
      b.emit(Opcode::Load, {b.rows_of(lines, step, 1), b.buf(index)});
      for (int64_t k = 0; k < 128; ++k) {
        const auto line = static_cast<int64_t>(scattered_line(static_cast<uint64_t>(step * 128 + k)));
        b.emit(Opcode::Load, {b.rows_of(x, line, 1), b.buf(buffer)});
      }
    }
  return b.take();
}

// One block over a tensor of 2 + passes parts: parts 0 and 1, then part 0 and part 2 + p for each pass p,
// then part 0 (validation/l2_probe.cu's retouch).
isa::Program retouch_probe(const ProbeShape& s) {
  const int64_t part = static_cast<int64_t>(s.bytes / kChunkBytes);
  if (part < 1) throw std::invalid_argument("l2 probe: bytes must be at least one 16 KiB chunk");
  check_passes(s.passes);
  Builder b("<l2-probe>");
  const int x = b.tensor("X", (2 + s.passes) * part * kChunkRows, kRowFloats, Dtype::F32, false, 0);
  const int buffer = b.buffer("B", kChunkRows, kRowFloats, Dtype::F32);
  const int kernel = b.kernel("l2_probe", {1, 1, 1});
  const auto read = [&](int64_t first_chunk, int64_t count) {
    for (int64_t c = first_chunk; c < first_chunk + count; ++c)
      b.emit(Opcode::Load, {b.rows_of(x, c * kChunkRows, kChunkRows), b.buf(buffer)});
  };
  b.begin_block(kernel, {0, 0, 0});
  read(0, 2 * part);
  for (int64_t pass = 0; pass < s.passes; ++pass) read(0, part), read((2 + pass) * part, part);
  read(0, part);
  return b.take();
}

// Every block reads the hot part, then the buffer after it (validation/l2_probe.cu's stale); wbetween and
// rbetween: then stores (or loads) the buffer and reads the hot part once more.
isa::Program hot_part_probe(const ProbeShape& s) {
  const int64_t hot = static_cast<int64_t>(s.hot_bytes / kChunkBytes);
  const int64_t chunks = static_cast<int64_t>(s.bytes / kChunkBytes);
  if (chunks < 1) throw std::invalid_argument("l2 probe: bytes must be at least one 16 KiB chunk");
  check_counts(s.passes, s.blocks);
  check_passes(s.hot_passes);
  Builder b("<l2-probe>");
  const int x = b.tensor("X", (hot + chunks) * kChunkRows, kRowFloats, Dtype::F32, false, 0);
  const int buffer = b.buffer("B", kChunkRows, kRowFloats, Dtype::F32);
  const int kernel = b.kernel("l2_probe", {s.blocks, 1, 1});
  const bool stores = s.mode == ProbeMode::WriteBetween;
  const auto touch = [&](int64_t first_chunk, int64_t count, bool store) {
    for (int64_t c = first_chunk; c < first_chunk + count; ++c) {
      const Operand rows = b.rows_of(x, c * kChunkRows, kChunkRows);
      if (store)
        b.emit(Opcode::Store, {b.buf(buffer), rows});
      else
        b.emit(Opcode::Load, {rows, b.buf(buffer)});
    }
  };
  for (int64_t block = 0; block < s.blocks; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    for (int64_t pass = 0; pass < s.hot_passes; ++pass) touch(0, hot, false);
    for (int64_t pass = 0; pass < s.passes; ++pass) touch(hot, chunks, stores);
    if (s.mode != ProbeMode::Stale) touch(0, hot, false);
  }
  return b.take();
}

// One block over the first `window` chunks of every head's K and V, as validation/l2_probe.cu's heads.
isa::Program heads_probe(const ProbeShape& s) {
  const int64_t head_chunks = static_cast<int64_t>(s.head_bytes / kChunkBytes);
  if (s.heads < 1 || s.heads > 4096) throw std::invalid_argument("l2 probe: heads must be 1..4096");
  const int64_t window = static_cast<int64_t>(s.bytes / 2 / static_cast<uint64_t>(s.heads) / kChunkBytes);
  if (window < 1 || window > head_chunks)
    throw std::invalid_argument("l2 probe: heads needs 1 to head_bytes / 16 KiB chunks per head and tensor");
  check_passes(s.passes);
  Builder b("<l2-probe>");
  // Q and O are never read: declared so that K and V sit where the harness's allocations put them.
  const auto tensor = [&](const char* name) {
    return b.tensor(name, s.heads * head_chunks * kChunkRows, kRowFloats, Dtype::F32, false, 0);
  };
  tensor("Q");
  const int k = tensor("K"), v = tensor("V");
  tensor("O");
  const int buffer = b.buffer("B", kChunkRows, kRowFloats, Dtype::F32);
  const int kernel = b.kernel("l2_probe", {1, 1, 1});
  b.begin_block(kernel, {0, 0, 0});
  for (int64_t pass = 0; pass < s.passes; ++pass)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t j = 0; j < window; ++j)
        for (int t : {k, v})
          b.emit(Opcode::Load, {b.rows_of(t, (h * head_chunks + j) * kChunkRows, kChunkRows), b.buf(buffer)});
  return b.take();
}

// One block over `copies` blocks of `bytes`, block i at chunk i * stride_bytes / 16 KiB of tensor X, as
// validation/l2_probe.cu's copies.
isa::Program copies_probe(const ProbeShape& s) {
  const int64_t count = static_cast<int64_t>(s.bytes / kChunkBytes);
  const int64_t stride = static_cast<int64_t>(s.stride_bytes / kChunkBytes);
  if (s.copies < 1 || s.copies > 1'000'000) throw std::invalid_argument("l2 probe: copies must be 1..10^6");
  if (count < 1 || s.stride_bytes % kChunkBytes != 0 || stride < count)
    throw std::invalid_argument(
        "l2 probe: copies needs 16 KiB <= bytes <= stride, stride whole 16 KiB chunks");
  check_passes(s.passes);
  Builder b("<l2-probe>");
  const int x =
      b.tensor("X", ((s.copies - 1) * stride + count) * kChunkRows, kRowFloats, Dtype::F32, false, 0);
  const int buffer = b.buffer("B", kChunkRows, kRowFloats, Dtype::F32);
  const int kernel = b.kernel("l2_probe", {1, 1, 1});
  b.begin_block(kernel, {0, 0, 0});
  for (int64_t pass = 0; pass < s.passes; ++pass)
    for (int64_t i = 0; i < s.copies; ++i)
      for (int64_t j = 0; j < count; ++j)
        b.emit(Opcode::Load, {b.rows_of(x, (i * stride + j) * kChunkRows, kChunkRows), b.buf(buffer)});
  return b.take();
}

void check_rewrite_shape(const ProbeShape& s, int64_t chunks) {
  if (rewrites_halves(s.mode)) {
    check_counts(s.passes, s.blocks);
    if (s.groups < 1 || s.blocks % s.groups != 0 || chunks < 2 * s.groups)
      throw std::invalid_argument(
          fmt::format("l2 probe: {}'s groups must divide its blocks and leave each group two 16 KiB chunks",
                      probe_mode_name(s.mode)));
    return;
  }
  const bool private_slices = s.mode != ProbeMode::RmwSpread;
  const int64_t least = s.mode == ProbeMode::Rmw ? s.blocks : private_slices ? 4 * s.blocks : 1;
  check_counts(s.passes, s.blocks);
  if (chunks < least)
    throw std::invalid_argument(private_slices
                                    ? "l2 probe: this mode needs at least one 16 KiB chunk per block"
                                      " (four: wthenread, rthenread)"
                                    : "l2 probe: bytes must be at least one 16 KiB chunk");
}

// Rewrites of a chunk under its lock (RmwLock) or between fences alone (RmwFence), as validation/l2_probe.cu
// takes them; RmwHalf's plain load and store.
void emit_half_rewrite(Builder& b, const ProbeShape& s, int x, int locks, int buffer, int64_t chunk,
                       int64_t lock_row) {
  const auto slice = b.rows_of(x, chunk * kChunkRows, kChunkRows);
  if (s.mode == ProbeMode::RmwLock)
    b.emit(Opcode::Lock, {b.rows_of(locks, lock_row, 1), Operand::imm(kAtomicLockBackoffCycles)});
  if (s.mode != ProbeMode::RmwHalf) b.emit(Opcode::Fence, {});
  b.emit(Opcode::Load, {slice, b.buf(buffer)});
  b.emit(Opcode::Store, {b.buf(buffer), slice});
  if (s.mode != ProbeMode::RmwHalf) b.emit(Opcode::Fence, {});
  if (s.mode == ProbeMode::RmwLock) b.emit(Opcode::Unlock, {b.rows_of(locks, lock_row, 1)});
}

// The blocks of Rmw, RmwSpread, RmwHalf, RmwLock, RmwFence, WriteThenRead and ReadThenRead, in
// validation/l2_probe.cu's order.
isa::Program rewrite_probe(const ProbeShape& s) {
  const int64_t chunks = static_cast<int64_t>(s.bytes / kChunkBytes);
  check_rewrite_shape(s, chunks);
  Builder b("<l2-probe>");
  const int x = b.tensor("X", chunks * kChunkRows, kRowFloats, Dtype::F32, false, 0);
  const int sink = b.tensor("sink", s.blocks, kRowFloats, Dtype::F32, false, 0);
  // The locked and fenced loads see the last store to a chunk, as the kernel's do after MEMBAR.SC.GPU.
  if (s.mode == ProbeMode::RmwLock || s.mode == ProbeMode::RmwFence)
    b.p.tensors[static_cast<size_t>(x)].coherent = true;
  const int locks =
      s.mode == ProbeMode::RmwLock ? b.tensor("locks", chunks / 2, 32, Dtype::F32, false, 0) : -1;
  const int buffer = b.buffer("B", kChunkRows, kRowFloats, Dtype::F32);
  const int kernel = b.kernel("l2_probe", {s.blocks, 1, 1});
  const auto load = [&](int64_t chunk) {
    b.emit(Opcode::Load, {b.rows_of(x, chunk * kChunkRows, kChunkRows), b.buf(buffer)});
  };
  const auto store = [&](int64_t chunk) {
    b.emit(Opcode::Store, {b.buf(buffer), b.rows_of(x, chunk * kChunkRows, kChunkRows)});
  };
  for (int64_t block = 0; block < s.blocks; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    if (rewrites_halves(s.mode)) {
      const int64_t per_group = s.blocks / s.groups, half = chunks / s.groups / 2, group = block / per_group;
      const int64_t read_half = group * 2 * half, start = block % per_group * half / per_group;
      for (int64_t pass = 0; pass < s.passes; ++pass)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t at = (start + i) % half;
          load(read_half + at);
          emit_half_rewrite(b, s, x, locks, buffer, read_half + half + at, group * half + at);
        }
    } else if (s.mode == ProbeMode::Rmw || s.mode == ProbeMode::RmwSpread) {
      const bool spread = s.mode == ProbeMode::RmwSpread;
      const int64_t count = spread ? chunks : chunks / s.blocks, begin = spread ? 0 : block * count;
      const int64_t start = spread ? block * chunks / s.blocks : 0;
      for (int64_t pass = 0; pass < s.passes; ++pass)
        for (int64_t i = 0; i < count; ++i)
          load(begin + (start + i) % count), store(begin + (start + i) % count);
    } else {
      const int64_t quarter = chunks / 4 / s.blocks, rest = (chunks - chunks / 4) / s.blocks;
      const int64_t first = block * quarter, stream = chunks / 4 + block * rest;
      for (int64_t i = 0; i < quarter; ++i)
        s.mode == ProbeMode::WriteThenRead ? store(first + i) : load(first + i);
      for (int64_t pass = 0; pass < s.passes; ++pass)
        for (int64_t i = 0; i < rest; ++i) load(stream + i);
      for (int64_t i = 0; i < quarter; ++i) load(first + i);
    }
    b.emit(Opcode::Store, {b.buf(buffer), b.rows_of(sink, block, 1)});
  }
  return b.take();
}

bool rewrites(ProbeMode mode) {
  return mode == ProbeMode::Rmw || mode == ProbeMode::RmwSpread || rewrites_halves(mode) ||
         mode == ProbeMode::WriteThenRead || mode == ProbeMode::ReadThenRead;
}

}  // namespace

bool reader_fences(ProbeMode mode) {
  return mode == ProbeMode::ReadFence || mode == ProbeMode::ReadFenceAsync ||
         mode == ProbeMode::ReadFenceWeak;
}

bool others_fence(ProbeMode mode) {
  return mode == ProbeMode::ReadFenceOther || mode == ProbeMode::ReadFenceOtherAsync ||
         mode == ProbeMode::ReadFenceOtherWeak;
}

bool keeps_chunks_in_flight(ProbeMode mode) {
  return mode == ProbeMode::Single || mode == ProbeMode::Shared || mode == ProbeMode::Spread ||
         mode == ProbeMode::Private || reader_fences(mode) || others_fence(mode);
}

bool rewrites_halves(ProbeMode mode) {
  return mode == ProbeMode::RmwHalf || mode == ProbeMode::RmwLock || mode == ProbeMode::RmwFence;
}

isa::Program l2_probe(const ProbeShape& s) {
  if (s.in_flight < 1 || s.in_flight > kMaxProbeInFlight)
    throw std::invalid_argument(fmt::format("l2 probe: in_flight must be 1..{}", kMaxProbeInFlight));
  if (s.in_flight > 1 && !keeps_chunks_in_flight(s.mode))
    throw std::invalid_argument(
        "l2 probe: in_flight applies to single, shared, spread, private and the rfence modes");
  if (s.mode == ProbeMode::Scatter) return scatter_probe(s);
  if (s.mode == ProbeMode::Retouch) return retouch_probe(s);
  if (s.mode == ProbeMode::Stale || s.mode == ProbeMode::WriteBetween || s.mode == ProbeMode::ReadBetween)
    return hot_part_probe(s);
  if (s.mode == ProbeMode::Heads) return heads_probe(s);
  if (s.mode == ProbeMode::Copies) return copies_probe(s);
  if (rewrites(s.mode)) return rewrite_probe(s);
  const int64_t chunks = static_cast<int64_t>(s.bytes / kChunkBytes);
  const bool one_block = s.mode == ProbeMode::Single || s.mode == ProbeMode::WriteSingle;
  const bool private_slices = s.mode == ProbeMode::Private || s.mode == ProbeMode::WritePrivate;
  const bool stores = s.mode == ProbeMode::WritePrivate || s.mode == ProbeMode::WriteSingle;
  const int64_t blocks = one_block ? 1 : s.blocks;
  if (chunks < 1) throw std::invalid_argument("l2 probe: bytes must be at least one 16 KiB chunk");
  check_counts(s.passes, blocks);
  if (s.fence_every < 1) throw std::invalid_argument("l2 probe: fence_every must be at least 1");
  if (private_slices && chunks < blocks)
    throw std::invalid_argument("l2 probe: private mode needs at least one 16 KiB chunk per block");
  Builder b("<l2-probe>");
  const int x = b.tensor("X", chunks * kChunkRows, kRowFloats, Dtype::F32, false, 0);
  std::vector<int> buffers;
  for (int64_t k = 0; k < s.in_flight; ++k)
    buffers.push_back(
        b.buffer(s.in_flight == 1 ? "B" : fmt::format("B{}", k), kChunkRows, kRowFloats, Dtype::F32));
  const int buffer = buffers.front();
  const int kernel = b.kernel("l2_probe", {blocks, 1, 1});
  for (int64_t block = 0; block < blocks; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    int64_t begin = 0, count = chunks, start = 0;
    if (private_slices) count = chunks / blocks, begin = block * count;
    if (s.mode == ProbeMode::Spread) start = block * chunks / blocks;
    for (int64_t pass = 0; pass < s.passes; ++pass)
      for (int64_t i = 0; i < count; ++i) {
        if (others_fence(s.mode) && block > 0) {
          b.emit(Opcode::Fence, {});
          continue;
        }
        const int64_t chunk = begin + (start + i) % count;
        const auto slice = b.rows_of(x, chunk * kChunkRows, kChunkRows);
        if (stores)
          b.emit(Opcode::Store, {b.buf(buffer), slice});
        else
          b.emit(Opcode::Load, {slice, b.buf(buffers[static_cast<size_t>(i % s.in_flight)])});
        if (reader_fences(s.mode) && (i + 1) % s.fence_every == 0) b.emit(Opcode::Fence, {});
      }
  }
  return b.take();
}

}  // namespace attnsim::traces
