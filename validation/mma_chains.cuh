// CHAINS independent m16n8k16 mma.sync products per warp per iteration (f16 operands, f32 accumulators),
// for the microbenchmarks (microbench.cu) and the issue probe (issue_probe.cu): with 8 chains a warp keeps
// its tensor core busy; with fewer, how much of it a few warps reach.
#pragma once

template <int CHAINS>
__device__ void mma_chains(int iters, float* sink) {
  unsigned a[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  unsigned b[2] = {0x3c003c00u, 0x3c003c00u};
  float acc[CHAINS][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};"
          : "+f"(acc[k][0]), "+f"(acc[k][1]), "+f"(acc[k][2]), "+f"(acc[k][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  float s = 0;
  for (auto& row : acc)
    for (float v : row) s += v;
  if (s == 12345.f) sink[threadIdx.x] = s;  // never true: keeps the products from being optimised away
}
