// What an atomic addition costs the L2, against a read and a write of the same bytes: every SM streams a
// buffer that fits in the L2 (16 MiB) 20 times with ld.global.cg, st.global.cg, red.global.add.f32 (one
// float per thread, 128 bytes per warp) or red.global.add.v4.f32 (a float4 per thread, 512 bytes per warp,
// what atomicAdd(float4*) compiles to on sm_90), and half the blocks reading while the other half add
// (the backward's mix of loads and dQ additions). A red that costs the L2 what a write costs streams at
// the write's rate; one that costs a read and a write, at half of it.
// Prints CSV: kernel,bytes,ms (median of 5 launches after a warm-up), bytes per second in GB/s.
// Build: nvcc -O3 -arch=sm_90 -o l2_atomic_probe validation/l2_atomic_probe.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e = (x);                                                                       \
    if (e != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));         \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

namespace {

constexpr size_t kBytes = 16u << 20;
constexpr int kPasses = 20;

__device__ size_t first_index() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }
__device__ size_t grid_stride() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

__global__ void read_kernel(const int4* __restrict__ buffer, size_t n, unsigned* sink) {
  int acc = 0;
  for (int p = 0; p < kPasses; ++p)
    for (size_t i = first_index(); i < n; i += grid_stride()) {
      const int4 v = __ldcg(buffer + i);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  if (acc == 12345) sink[0] = 1;
}

__global__ void write_kernel(int4* buffer, size_t n) {
  for (int p = 0; p < kPasses; ++p)
    for (size_t i = first_index(); i < n; i += grid_stride()) __stcg(buffer + i, make_int4(p, p, p, p));
}

__global__ void red_f32_kernel(float* buffer, size_t n) {
  for (int p = 0; p < kPasses; ++p)
    for (size_t i = first_index(); i < n; i += grid_stride()) atomicAdd(buffer + i, 1.0f);
}

__global__ void red_v4_kernel(float4* buffer, size_t n) {
  for (int p = 0; p < kPasses; ++p)
    for (size_t i = first_index(); i < n; i += grid_stride()) atomicAdd(buffer + i, make_float4(1, 1, 1, 1));
}

// Even blocks read `reads` (int4), odd blocks add into `adds` (float4); each half strides over its own buffer.
__global__ void read_and_red_kernel(const int4* __restrict__ reads, float4* adds, size_t n, unsigned* sink) {
  const size_t half_grid = gridDim.x / 2;
  const size_t first = (blockIdx.x / 2) * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = half_grid * blockDim.x;
  int acc = 0;
  for (int p = 0; p < kPasses; ++p)
    for (size_t i = first; i < n; i += stride) {
      if (blockIdx.x % 2 == 0) {
        const int4 v = __ldcg(reads + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
      } else {
        atomicAdd(adds + i, make_float4(1, 1, 1, 1));
      }
    }
  if (acc == 12345) sink[0] = 1;
}

template <class Launch>
double median_ms(Launch launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  launch();  // warm-up: brings the buffer into the L2
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int rep = 0; rep < 5; ++rep) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void emit(const char* kernel, double bytes, double ms) {
  std::printf("%s,%.0f,%.4f,%.1f\n", kernel, bytes, ms, bytes / (ms * 1e-3) / 1e9);
}

}  // namespace

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 4, threads = 512;
  void *a, *b;
  unsigned* sink;
  CHECK(cudaMalloc(&a, kBytes));
  CHECK(cudaMalloc(&b, kBytes));
  CHECK(cudaMalloc(&sink, 64));
  CHECK(cudaMemset(a, 0, kBytes));
  CHECK(cudaMemset(b, 0, kBytes));
  const size_t n16 = kBytes / 16, n4 = kBytes / 4;
  const double streamed = static_cast<double>(kBytes) * kPasses;
  std::printf("kernel,bytes,ms,gbps\n");
  emit("read", streamed,
       median_ms([&] { read_kernel<<<blocks, threads>>>(static_cast<const int4*>(a), n16, sink); }));
  emit("write", streamed, median_ms([&] { write_kernel<<<blocks, threads>>>(static_cast<int4*>(a), n16); }));
  emit("red_f32", streamed, median_ms([&] { red_f32_kernel<<<blocks, threads>>>(static_cast<float*>(a), n4); }));
  emit("red_v4", streamed, median_ms([&] { red_v4_kernel<<<blocks, threads>>>(static_cast<float4*>(a), n16); }));
  // Two 8 MiB halves: one read, one added into, each by half the blocks; bytes are both halves'.
  emit("read_and_red_v4", streamed, median_ms([&] {
         read_and_red_kernel<<<blocks, threads>>>(static_cast<const int4*>(a), static_cast<float4*>(b), n16 / 2,
                                                  sink);
       }));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(sink));
  return 0;
}
