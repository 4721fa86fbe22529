// The L2 line probe's kernels and its grow loop, shared by l2_line_probe.cu and l2_chunk_probe.cu (see
// l2_line_probe.cu for what they measure).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"

constexpr size_t kLine = 128;
constexpr size_t kChunkLines = 16384 / kLine;

__device__ __forceinline__ unsigned load_cg(const unsigned* p) {
  unsigned v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The byte offset of line i of the read order.
__device__ __forceinline__ size_t line_offset(size_t i, int heads, size_t head_lines, size_t window_lines,
                                              bool* is_v) {
  if (heads == 0) return i * kLine;
  const size_t chunk = i / kChunkLines, within = i % kChunkLines;
  *is_v = chunk % 2 == 1;
  const size_t pair = chunk / 2;  // (head, chunk of the window)
  const size_t per_head = window_lines / kChunkLines;
  const size_t head = pair / per_head, j = pair % per_head;
  return (head * head_lines + j * kChunkLines + within) * kLine;
}

__global__ void line_kernel(const char* __restrict__ k, const char* __restrict__ v, size_t lines, int heads,
                            size_t head_lines, size_t window_lines, int passes,
                            unsigned char* __restrict__ out) {
  __shared__ volatile unsigned sink;
  unsigned dep = 0;
  for (int p = 0; p < passes; ++p)
    for (size_t i = 0; i < lines; ++i) {
      bool is_v = false;
      const size_t offset = line_offset(i, heads, head_lines, window_lines, &is_v);
      const char* base = is_v ? v : k;
      const unsigned* at = reinterpret_cast<const unsigned*>(base + offset) + threadIdx.x + dep;
      const long long start = clock64();
      const unsigned value = load_cg(at);
      sink = value;  // the store waits for the load; the clock is read after it issues
      __syncwarp();
      const long long end = clock64();
      dep = value;
      const long long eighths = (end - start) / 8;
      if (threadIdx.x == 0)
        out[static_cast<size_t>(p) * lines + i] = static_cast<unsigned char>(eighths > 255 ? 255 : eighths);
    }
}

__global__ void flush_kernel(const int4* __restrict__ junk, size_t count, int* __restrict__ sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    acc ^= __ldcg(junk + i).x;
  if (acc == 0x12345678) *sink = acc;
}

constexpr size_t kBlockLines = (size_t{128} << 10) / kLine;

int grow(const char* buffer, size_t lines, int passes, int lanes, size_t first_blocks, const int4* junk,
         size_t junk_count, int* flag, unsigned char* out, FILE* f) {
  const size_t last_blocks = lines / kBlockLines;
  if (passes != 2 || first_blocks < 1 || first_blocks > last_blocks)
    return std::fprintf(stderr, "grow: PASSES 2, 1 <= FIRST_BLOCKS <= BYTES / 128 KiB\n"), 2;
  // GRAIN_KIB (default 128): the digits' granule; the blocks added stay 128 KiB.
  const char* grain_text = std::getenv("GRAIN_KIB");
  const size_t grain = (grain_text ? std::strtoull(grain_text, nullptr, 10) : 128) * 1024 / kLine;
  if (grain < 1 || kBlockLines % grain != 0) return std::fprintf(stderr, "grow: GRAIN_KIB divides 128\n"), 2;
  // HALVES=1: two digits per granule, its lines with address bits 11 and 14 equal, then unequal (one SM's
  // reads fill the L2's groups of sets by halves of a block split so: docs/chip.md).
  const char* halves_text = std::getenv("HALVES");
  const bool halves = halves_text && std::atoi(halves_text) != 0;
  if (halves && grain < 256) return std::fprintf(stderr, "grow: HALVES needs GRAIN_KIB >= 32\n"), 2;
  std::vector<unsigned char> host(lines * 2);
  for (size_t n = first_blocks; n <= last_blocks; ++n) {
    const size_t count = n * kBlockLines;
    flush_kernel<<<264, 1024>>>(junk, junk_count, flag);
    line_kernel<<<1, lanes>>>(buffer, buffer, count, 0, 0, 0, 2, out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(host.data(), out, count * 2, cudaMemcpyDeviceToHost));
    std::fprintf(f, "%zu,", n);
    for (size_t g = 0; g < count / grain; ++g)
      for (int half = 0; half < (halves ? 2 : 1); ++half) {
        size_t slow = 0, total = 0;
        for (size_t i = g * grain; i < (g + 1) * grain; ++i) {
          if (halves && static_cast<int>((i >> 4 ^ i >> 7) & 1) != half) continue;  // address bits 11, 14
          slow += host[count + i] * 8 >= 448;
          ++total;
        }
        std::fputc('0' + static_cast<int>(std::min<size_t>(9, slow * 10 / total)), f);
      }
    std::fputc('\n', f);
  }
  std::printf("RESULT layout=grow blocks=%zu..%zu k=%p\n", first_blocks, last_blocks,
              static_cast<const void*>(buffer));
  return 0;
}

