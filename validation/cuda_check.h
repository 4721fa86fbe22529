// CHECK(call): a CUDA runtime call that fails prints where, what and why, and the program exits 2. Shared by
// every device program here (the harness and its kernels, l2_probe.cu, microbench.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                 \
  do {                                                                                              \
    cudaError_t err_ = (call);                                                                      \
    if (err_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)
