#include "traces/l2_probe.h"

#include <stdexcept>

#include "traces/builder.h"

namespace attnsim::traces {

namespace {

constexpr int64_t kRowFloats = 1024;  // one thread block of 1024 threads loading 16 bytes each
constexpr int64_t kChunkRows = 4;
constexpr uint64_t kChunkBytes = static_cast<uint64_t>(kRowFloats * kChunkRows) * 4;

}  // namespace

std::optional<ProbeMode> find_probe_mode(std::string_view name) {
  for (auto mode : {ProbeMode::Single, ProbeMode::Shared, ProbeMode::Spread, ProbeMode::Private,
                    ProbeMode::WritePrivate, ProbeMode::WriteSingle})
    if (probe_mode_name(mode) == name) return mode;
  return std::nullopt;
}

std::string_view probe_mode_name(ProbeMode mode) {
  switch (mode) {
    case ProbeMode::Single:
      return "single";
    case ProbeMode::Shared:
      return "shared";
    case ProbeMode::Spread:
      return "spread";
    case ProbeMode::Private:
      return "private";
    case ProbeMode::WritePrivate:
      return "wprivate";
    case ProbeMode::WriteSingle:
      return "wsingle";
  }
  return "?";
}

isa::Program l2_probe(const ProbeShape& s) {
  const int64_t chunks = static_cast<int64_t>(s.bytes / kChunkBytes);
  const bool one_block = s.mode == ProbeMode::Single || s.mode == ProbeMode::WriteSingle;
  const bool private_slices = s.mode == ProbeMode::Private || s.mode == ProbeMode::WritePrivate;
  const bool stores = s.mode == ProbeMode::WritePrivate || s.mode == ProbeMode::WriteSingle;
  const int64_t blocks = one_block ? 1 : s.blocks;
  if (chunks < 1) throw std::invalid_argument("l2 probe: bytes must be at least one 16 KiB chunk");
  if (s.passes < 1 || s.passes > 1'000'000) throw std::invalid_argument("l2 probe: passes must be 1..10^6");
  if (blocks < 1 || blocks > 1'000'000) throw std::invalid_argument("l2 probe: blocks must be 1..10^6");
  if (private_slices && chunks < blocks)
    throw std::invalid_argument("l2 probe: private mode needs at least one 16 KiB chunk per block");
  Builder b("<l2-probe>");
  const int x = b.tensor("X", chunks * kChunkRows, kRowFloats, Dtype::F32, false, 0);
  const int buffer = b.buffer("B", kChunkRows, kRowFloats, Dtype::F32);
  const int kernel = b.kernel("l2_probe", {blocks, 1, 1});
  for (int64_t block = 0; block < blocks; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    int64_t begin = 0, count = chunks, start = 0;
    if (private_slices) count = chunks / blocks, begin = block * count;
    if (s.mode == ProbeMode::Spread) start = block * chunks / blocks;
    for (int64_t pass = 0; pass < s.passes; ++pass)
      for (int64_t i = 0; i < count; ++i) {
        const int64_t chunk = begin + (start + i) % count;
        const auto slice = b.rows_of(x, chunk * kChunkRows, kChunkRows);
        if (stores)
          b.emit(Opcode::Store, {b.buf(buffer), slice});
        else
          b.emit(Opcode::Load, {slice, b.buf(buffer)});
      }
  }
  return b.take();
}

}  // namespace attnsim::traces
