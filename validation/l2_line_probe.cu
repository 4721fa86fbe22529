// L2 line probe: which lines of a buffer miss when one SM re-reads it, line by line. One thread reads one
// 4-byte word of every 128-byte line (ld.global.cg: L2 only) in a fixed order, PASSES times, and times
// each load with clock64 (LANES=32 in the environment: a warp reads each whole line in one request, as the
// kernels' loads do, and lane 0 times it); the latency of every line in every pass goes to a file. Under LRU
// a set that more lines map to than it has ways misses all of them on every later pass, so the lines that
// miss in pass 2 are the overflowing sets' lines, and where they lie in the address space shows how the L2's
// set index spreads the buffer (the lines' first-pass latencies tell near-homed from far-homed lines as well:
// those come across the fabric). Counts alone (validation/l2_probe.cu) only say how many.
//   l2_line_probe LAYOUT BYTES PASSES FILE [HEADS]
// LAYOUT single: one buffer of BYTES, lines in address order.
// LAYOUT heads: Q, K, V and O of HEADS x HEAD_BYTES each (HEAD_BYTES from the environment, default 8 MiB),
//   allocated as the harness allocates them; the first BYTES / (2 HEADS) of every head's K and V, head by
//   head, per 16 KiB chunk K then V (validation/l2_probe.cu's heads).
// LAYOUT grow: one buffer of BYTES, read as `single` over its first n 128 KiB blocks for every n from HEADS
//   (here: the first block count) to BYTES / 128 KiB, each launch after a flush: FILE gets a line per n,
//   "n," then a digit per block (per GRAIN_KIB of the environment, default 128), the tenths of its lines
//   whose second-pass load took 448 cycles or more (9: 90% or more). A block whose lines all turn slow when
//   block n joins shares the sets of block n: the blocks that turn slow together are one group of sets.
// Otherwise FILE gets one byte per line and pass, pass by pass: min(255, cycles / 8). Every launch is
// preceded by a flush (every SM reads a 256 MiB buffer), so the L2 holds nothing of the probe's buffers. The
// buffers hold zeros, which the thread adds to its next address: each load waits for the one before it. The
// latencies themselves (stores of one byte a line) pass through the L2 as well: 1/128 of the lines read,
// spread over every set.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "l2_line_kernels.cuh"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: l2_line_probe single|heads BYTES PASSES FILE [HEADS]\n");
    return 2;
  }
  const std::string layout = argv[1];
  const size_t bytes = std::strtoull(argv[2], nullptr, 10);
  const int passes = std::atoi(argv[3]);
  const int heads = layout == "heads" ? (argc > 5 ? std::atoi(argv[5]) : 0) : 0;
  const size_t first_blocks = layout == "grow" && argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 0;
  const char* head_text = std::getenv("HEAD_BYTES");
  const size_t head_bytes = head_text ? std::strtoull(head_text, nullptr, 10) : size_t{8} << 20;
  const size_t head_lines = head_bytes / kLine;
  size_t window_lines = 0, lines = bytes / kLine, tensor = bytes;
  if (layout == "heads") {
    if (heads < 1) return std::fprintf(stderr, "heads: HEADS >= 1\n"), 2;
    window_lines = bytes / 2 / static_cast<size_t>(heads) / 16384 * kChunkLines;
    if (window_lines < kChunkLines || window_lines > head_lines)
      return std::fprintf(stderr, "heads: 16 KiB <= BYTES / (2 HEADS) <= HEAD_BYTES\n"), 2;
    lines = 2 * static_cast<size_t>(heads) * window_lines;
    tensor = static_cast<size_t>(heads) * head_bytes;
  } else if ((layout != "single" && layout != "grow") || lines < 1) {
    return std::fprintf(stderr, "bad layout or size\n"), 2;
  }
  if (passes < 1) return 2;
  char *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *pad = nullptr;
  // PAD_MIB: allocate that much first, so the buffers get other physical pages than a run without it.
  const char* pad_text = std::getenv("PAD_MIB");
  if (pad_text) CHECK(cudaMalloc(&pad, std::strtoull(pad_text, nullptr, 10) << 20));
  CHECK(cudaMalloc(&q, layout == "heads" ? tensor : 4096));
  CHECK(cudaMalloc(&k, tensor));
  if (layout == "heads") {
    CHECK(cudaMalloc(&v, tensor));
    CHECK(cudaMalloc(&o, tensor));
  }
  for (char* t : {k, v})
    if (t) CHECK(cudaMemset(t, 0, tensor));
  const size_t junk_count = (size_t{256} << 20) / sizeof(int4);
  int4* junk = nullptr;
  int* flag = nullptr;
  unsigned char* out = nullptr;
  CHECK(cudaMalloc(&junk, junk_count * sizeof(int4)));
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMalloc(&out, lines * passes));
  CHECK(cudaMemset(junk, 1, junk_count * sizeof(int4)));
  CHECK(cudaDeviceSynchronize());
  // LANES=32: a warp reads the whole line in one request (as the kernels' loads do); default one word.
  const char* lanes_text = std::getenv("LANES");
  const int lanes = lanes_text ? std::atoi(lanes_text) : 1;
  if (lanes < 1 || lanes > 32) return std::fprintf(stderr, "LANES must be 1..32\n"), 2;
  if (layout == "grow") {
    FILE* f = std::fopen(argv[4], "w");
    if (!f) return 1;
    const int status = grow(k, lines, passes, lanes, first_blocks, junk, junk_count, flag, out, f);
    std::fclose(f);
    return status;
  }
  flush_kernel<<<264, 1024>>>(junk, junk_count, flag);
  CHECK(cudaGetLastError());
  line_kernel<<<1, lanes>>>(k, v ? v : k, lines, heads, head_lines, window_lines, passes, out);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned char> host(lines * passes);
  CHECK(cudaMemcpy(host.data(), out, host.size(), cudaMemcpyDeviceToHost));
  FILE* f = std::fopen(argv[4], "wb");
  if (!f || std::fwrite(host.data(), 1, host.size(), f) != host.size()) return 1;
  std::fclose(f);
  // A coarse histogram per pass (64-cycle bins) for the log.
  for (int p = 0; p < passes; ++p) {
    std::vector<size_t> bins(33, 0);
    for (size_t i = 0; i < lines; ++i) ++bins[std::min<size_t>(32, host[p * lines + i] / 8)];
    std::printf("RESULT layout=%s heads=%d head_bytes=%zu bytes=%zu lines=%zu pass=%d k=%p v=%p bins64:",
                layout.c_str(), heads, head_bytes, lines * kLine, lines, p, static_cast<void*>(k),
                static_cast<void*>(v));
    for (size_t b = 0; b < bins.size(); ++b) std::printf(" %zu", bins[b]);
    std::printf("\n");
  }
  for (char* t : {q, k, v, o, pad})
    if (t) CHECK(cudaFree(t));
  CHECK(cudaFree(junk));
  CHECK(cudaFree(flag));
  CHECK(cudaFree(out));
  return 0;
}
