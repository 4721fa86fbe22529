// Microbenchmarks of one GPU, for calibrating the presets (issue "Kernel time"): the SM clock, per-SM
// mma.sync (f16 in, f32 accumulate), FFMA and MUFU exp throughput, shared-memory bandwidth, L2 hit
// bandwidth and latency, DRAM streaming bandwidth, and kernel launch overhead. Each figure is the median of
// several timed repetitions (CUDA events) after a warm-up; the per-SM figures run one block per SM on every
// SM and divide by the SM count. Prints `metric,value,unit,how` lines (CSV with a header) on stdout.
//   nvcc -O3 -arch=sm_90 -o microbench validation/microbench.cu && ./microbench > microbench.csv
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "cuda_check.h"
#include "mma_chains.cuh"

namespace {

int g_sms = 0;

// Median milliseconds of `reps` runs of `launch` (one warm-up first).
double median_ms(const std::function<void()>& launch, int reps = 7) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms(reps);
  for (float& m : ms) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventElapsedTime(&m, a, b));
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void emit(const char* metric, double value, const char* unit, const char* how) {
  std::printf("%s,%.6g,%s,\"%s\"\n", metric, value, unit, how);
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// SM clock: clock64 ticks over globaltimer nanoseconds while one thread spins.
__global__ void clock_kernel(unsigned long long* out, long long spin) {
  const long long c0 = clock64();
  const unsigned long long t0 = global_ns();
  while (clock64() - c0 < spin) {
  }
  out[0] = clock64() - c0;
  out[1] = global_ns() - t0;
}

// CHAINS independent m16n8k16 products per warp per iteration: with 8, the per-SM peak; with fewer, how
// much of it a few warps reach.
template <int CHAINS>
__global__ void mma_chains_kernel(float* sink, int iters) {
  mma_chains<CHAINS>(iters, sink);
}

// 8 independent FMA chains per thread.
__global__ void ffma_kernel(float* sink, int iters) {
  float x[8];
  for (int k = 0; k < 8; ++k) x[k] = threadIdx.x * 1e-7f + k;
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = fmaf(x[k], 0.9999f, 1e-7f);
  float s = 0;
  for (float v : x) s += v;
  if (s == 12345.f) sink[threadIdx.x] = s;
}

// 8 independent ex2.approx chains per thread (the MUFU unit that exp uses).
__global__ void exp_kernel(float* sink, int iters) {
  float x[8];
  for (int k = 0; k < 8; ++k) x[k] = -1.0f - threadIdx.x * 1e-6f - k * 1e-3f;
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float y;
      asm volatile("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x[k]));
      x[k] = -y;
    }
  float s = 0;
  for (float v : x) s += v;
  if (s == 12345.f) sink[threadIdx.x] = s;
}

// Every thread reads 16 bytes of shared memory per step, conflict-free.
__global__ void smem_kernel(float* sink, int iters) {
  __shared__ int4 tile[2048];
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) tile[i] = make_int4(i, i, i, i);
  __syncthreads();
  int4 acc = make_int4(0, 0, 0, 0);
  unsigned idx = threadIdx.x;
  for (int i = 0; i < iters; ++i) {
    const int4 v = tile[(idx + i * 32) & 2047];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if (acc.x + acc.y + acc.z + acc.w == 12345) sink[threadIdx.x] = 1;
}

// Latencies: one warp runs `steps` dependent instructions between two clock64 reads; out[0] = cycles per
// instruction (the loop's few integer instructions run alongside and are included).
__global__ void mma_latency_kernel(long long* out, float* sink, int steps) {
  unsigned a[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  unsigned b[2] = {0x3c003c00u, 0x3c003c00u};
  float acc[4] = {};
  const long long c0 = clock64();
  for (int i = 0; i < steps; ++i)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  const long long c1 = clock64();
  if (threadIdx.x == 0) out[0] = (c1 - c0) / steps;
  if (acc[0] + acc[1] + acc[2] + acc[3] == 12345.f) sink[threadIdx.x] = acc[0];
}

__global__ void ex2_latency_kernel(long long* out, float* sink, int steps) {
  float x = -1.0f - threadIdx.x * 1e-6f;
  const long long c0 = clock64();
  for (int i = 0; i < steps; ++i) {
    float y;
    asm volatile("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    x = -y;
  }
  const long long c1 = clock64();
  if (threadIdx.x == 0) out[0] = (c1 - c0) / steps;
  if (x == 12345.f) sink[threadIdx.x] = x;
}

__global__ void ffma_latency_kernel(long long* out, float* sink, int steps) {
  float x = threadIdx.x * 1e-7f;
  const long long c0 = clock64();
  for (int i = 0; i < steps; ++i) asm volatile("fma.rn.f32 %0, %0, 0f3F7FFF58, 0f33D6BF95;" : "+f"(x));
  const long long c1 = clock64();
  if (threadIdx.x == 0) out[0] = (c1 - c0) / steps;
  if (x == 12345.f) sink[threadIdx.x] = x;
}

// A butterfly shuffle whose result feeds the next (the row max and sum of a tiled softmax reduce so).
__global__ void shfl_latency_kernel(long long* out, float* sink, int steps) {
  float x = threadIdx.x;
  const long long c0 = clock64();
  for (int i = 0; i < steps; ++i) x = __shfl_xor_sync(0xffffffffu, x, 1);
  const long long c1 = clock64();
  if (threadIdx.x == 0) out[0] = (c1 - c0) / steps;
  if (x == 12345.f) sink[threadIdx.x] = x;
}

// ldmatrix.x4 whose address depends on the value the previous one loaded (always 0 at run time).
__global__ void ldmatrix_latency_kernel(long long* out, float* sink, int steps) {
  __shared__ __align__(16) unsigned short tile[64 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) tile[i] = 0;
  __syncthreads();
  unsigned r[4] = {0, 0, 0, 0};
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(tile)) + (threadIdx.x % 32) * 128;
  const long long c0 = clock64();
  for (int i = 0; i < steps; ++i) {
    const unsigned addr = base + (r[0] & 0x70u);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  }
  const long long c1 = clock64();
  if (threadIdx.x == 0) out[0] = (c1 - c0) / steps;
  if (r[0] + r[1] + r[2] + r[3] == 12345u) sink[threadIdx.x] = 1;
}

// Streams `n` int4 with ld.global.cg (L2, not L1) `passes` times, grid-stride.
__global__ void read_kernel(const int4* __restrict__ buffer, size_t n, int passes, unsigned* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int p = 0; p < passes; ++p)
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
      const int4 v = __ldcg(buffer + i);
      acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
    }
  if (acc.x + acc.y + acc.z + acc.w == 12345) sink[0] = 1;
}

// One thread follows a chain of indices: each load waits for the one before (latency).
__global__ void chase_kernel(const unsigned* __restrict__ next, int steps, unsigned* sink) {
  unsigned i = 0;
  for (int s = 0; s < steps; ++s) i = __ldcg(next + i);
  sink[0] = i;
}

__global__ void empty_kernel() {}

double clock_rate() {
  unsigned long long* d;
  CHECK(cudaMalloc(&d, 2 * sizeof(unsigned long long)));
  clock_kernel<<<1, 1>>>(d, 200000000LL);
  CHECK(cudaDeviceSynchronize());
  unsigned long long h[2];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  const double ghz = static_cast<double>(h[0]) / static_cast<double>(h[1]);
  emit("sm_clock", ghz, "GHz", "clock64 ticks / globaltimer ns, one thread spinning 2e8 ticks");
  return ghz;
}

// Per-SM throughput of a compute kernel: one block of `threads` per SM, ops_per_iter per thread per iter.
void compute_rate(const char* metric, void (*kernel)(float*, int), int threads, double ops_per_thread_iter,
                  const char* unit, const char* how, double clock_ghz) {
  float* sink;
  CHECK(cudaMalloc(&sink, 1024 * sizeof(float)));
  const int iters = 20000;
  const double ms = median_ms([&] { kernel<<<g_sms, threads>>>(sink, iters); });
  const double per_sm_per_s = ops_per_thread_iter * threads * iters / (ms * 1e-3);
  emit(metric, per_sm_per_s / (clock_ghz * 1e9), unit, how);
  CHECK(cudaFree(sink));
}

// Cycles per dependent instruction of one warp (median of 5 launches).
void op_latency(const char* metric, void (*kernel)(long long*, float*, int), const char* how) {
  long long* out;
  float* sink;
  CHECK(cudaMalloc(&out, sizeof(long long)));
  CHECK(cudaMalloc(&sink, 32 * sizeof(float)));
  const int steps = 4096;
  std::vector<long long> cycles;
  for (int rep = 0; rep < 6; ++rep) {
    kernel<<<1, 32>>>(out, sink, steps);
    CHECK(cudaGetLastError());
    long long c = 0;
    CHECK(cudaMemcpy(&c, out, sizeof c, cudaMemcpyDeviceToHost));
    if (rep > 0) cycles.push_back(c);  // the first launch warms the instruction cache
  }
  std::sort(cycles.begin(), cycles.end());
  emit(metric, static_cast<double>(cycles[cycles.size() / 2]), "clk", how);
  CHECK(cudaFree(out));
  CHECK(cudaFree(sink));
}

// mma.sync rate with few warps and little independent work: what a lone thread block's warps reach.
void mma_occupancy_rates(double clock_ghz) {
  char metric[96], how[160];
  const int warps_per_sm[] = {4, 8, 16};
  for (int warps : warps_per_sm) {
    const std::pair<int, void (*)(float*, int)> chains[] = {
        {1, mma_chains_kernel<1>}, {2, mma_chains_kernel<2>}, {4, mma_chains_kernel<4>}, {8, mma_chains_kernel<8>}};
    for (const auto& [n, kernel] : chains) {
      std::snprintf(metric, sizeof metric, "mma_sync_flop_per_clk_per_sm_w%d_c%d", warps, n);
      std::snprintf(how, sizeof how, "mma.sync m16n8k16, %d warps per SM, %d independent accumulators per warp",
                    warps, n);
      compute_rate(metric, kernel, warps * 32, n * 4096.0 / 32, "FLOP/clk", how, clock_ghz);
    }
  }
}

void memory_rates() {
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 64));
  const size_t l2_bytes = 16u << 20, dram_bytes = 4ull << 30;
  int4* buffer;
  CHECK(cudaMalloc(&buffer, dram_bytes));
  CHECK(cudaMemset(buffer, 1, dram_bytes));
  const size_t l2_n = l2_bytes / sizeof(int4), dram_n = dram_bytes / sizeof(int4);
  const int passes = 20;
  double ms = median_ms([&] { read_kernel<<<g_sms * 4, 512>>>(buffer, l2_n, passes, sink); });
  emit("l2_read_bandwidth", l2_bytes * passes / (ms * 1e-3) / 1e9, "GB/s",
       "all SMs re-read 16 MiB (fits L2) 20 times with ld.global.cg, 4 blocks of 512 per SM");
  ms = median_ms([&] { read_kernel<<<g_sms * 4, 512>>>(buffer, dram_n, 1, sink); });
  emit("dram_read_bandwidth", dram_bytes / (ms * 1e-3) / 1e9, "GB/s",
       "all SMs read 4 GiB once with ld.global.cg, 4 blocks of 512 per SM");
  ms = median_ms([&] { CHECK(cudaMemcpyAsync(buffer + dram_n / 2, buffer, dram_bytes / 2, cudaMemcpyDeviceToDevice)); });
  emit("dram_copy_bandwidth", dram_bytes / (ms * 1e-3) / 1e9, "GB/s",
       "cudaMemcpy device to device of 2 GiB, bytes read + written");
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(sink));
}

// A random cyclic chain over `bytes`, 128-byte stride (one load per line).
void latency(const char* metric, size_t bytes, bool warm, int steps, const char* how) {
  const size_t lines = bytes / 128, words_per_line = 32;
  std::vector<unsigned> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937(7));
  std::vector<unsigned> next(lines * words_per_line, 0);
  for (size_t k = 0; k < lines; ++k)
    next[order[k] * words_per_line] = static_cast<unsigned>(order[(k + 1) % lines] * words_per_line);
  unsigned *d, *sink;
  CHECK(cudaMalloc(&d, next.size() * sizeof(unsigned)));
  CHECK(cudaMalloc(&sink, 64));
  CHECK(cudaMemcpy(d, next.data(), next.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  if (warm) chase_kernel<<<1, 1>>>(d, static_cast<int>(lines), sink);  // every line once: into L2
  const double ms = median_ms([&] { chase_kernel<<<1, 1>>>(d, steps, sink); }, 5);
  emit(metric, ms * 1e6 / steps, "ns", how);
  CHECK(cudaFree(d));
  CHECK(cudaFree(sink));
}

void launch_overhead() {
  const int launches = 2000;
  const double ms = median_ms([&] {
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32>>>();
  });
  emit("launch_interval", ms * 1e3 / launches, "us", "2,000 back-to-back empty launches on one stream");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double graph_ms = median_ms([&] { CHECK(cudaGraphLaunch(exec, 0)); });
  emit("launch_interval_graph", graph_ms * 1e3 / launches, "us", "the same 2,000 launches as one CUDA graph");
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  std::printf("metric,value,unit,how\n");
  emit("sm_count", g_sms, "SMs", "cudaGetDeviceProperties");
  emit("l2_bytes", prop.l2CacheSize, "bytes", "cudaGetDeviceProperties");
  const double ghz = clock_rate();
  // m16n8k16: 16 x 8 x 16 multiply-adds = 4,096 FLOP per warp-instruction, 8 per iteration per warp.
  compute_rate("mma_sync_f16_f32_flop_per_clk_per_sm", mma_chains_kernel<8>, 256, 8 * 4096.0 / 32, "FLOP/clk",
               "mma.sync m16n8k16 f16 x f16 + f32, 8 warps per SM, 8 independent accumulators per warp", ghz);
  compute_rate("ffma_flop_per_clk_per_sm", ffma_kernel, 1024, 8 * 2.0, "FLOP/clk",
               "FFMA, 32 warps per SM, 8 independent chains per thread", ghz);
  compute_rate("ex2_per_clk_per_sm", exp_kernel, 1024, 8, "ops/clk",
               "ex2.approx.f32 (MUFU), 32 warps per SM, 8 independent chains per thread", ghz);
  compute_rate("smem_read_bytes_per_clk_per_sm", smem_kernel, 1024, 16, "bytes/clk",
               "ld.shared 16 bytes per thread, conflict-free, 32 warps per SM", ghz);
  mma_occupancy_rates(ghz);
  op_latency("mma_sync_latency", mma_latency_kernel, "mma.sync m16n8k16 f32 accumulate, one warp, each on the last's result");
  op_latency("ex2_latency", ex2_latency_kernel, "ex2.approx.f32, one warp, each on the last's result");
  op_latency("ffma_latency", ffma_latency_kernel, "fma.rn.f32, one warp, each on the last's result");
  op_latency("shfl_latency", shfl_latency_kernel, "shfl.sync.bfly, one warp, each on the last's result");
  op_latency("ldmatrix_x4_latency", ldmatrix_latency_kernel,
             "ldmatrix.x4 from shared memory, one warp, each address from the last's data");
  memory_rates();
  latency("l2_hit_latency", 8u << 20, true, 200000,
          "one thread, dependent ld.global.cg over 8 MiB (in L2), 128-byte lines");
  // 600,000 lines (77 MB) per launch, more than L2 holds, so repeated launches miss as well.
  latency("dram_latency", 1u << 30, false, 600000,
          "one thread, dependent ld.global.cg along 600,000 random 128-byte lines of 1 GiB (77 MB: misses L2)");
  launch_overhead();
  return 0;
}
