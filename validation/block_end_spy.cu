// When does each thread block of a library kernel end? The kernel cannot be changed, but each of its blocks
// writes its own output tile once, at its end (the memory-efficient backward's dK_j, FlashAttention-2's
// O_i). A spy kernel, in a green context of the SMs the measured kernel's context leaves out, polls the
// first 8 bytes of every block's tile (filled with 0xFF before the launch) and records %globaltimer when
// they change. block_times_probe.py drives it; the model's side is `attnsim validate --block-times`.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kSpyThreads = 1024;
constexpr int kMaxPerThread = 32;  // up to 32,768 watched tiles
constexpr uint64_t kSentinel = ~0ull;

__device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ uint64_t load_at_l2(const uint64_t* p) {  // relaxed at GPU scope: never an L1 copy
  uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// info: [0] spy start ns, [1] spy end ns, [2] sweeps, [3] the spy's SM, [4] tiles never seen to change,
// [5] tiles already changed at the first sweep, [6] clock64 at start, [7] clock64 at end.
__global__ void __launch_bounds__(kSpyThreads)
    spy(const uint64_t* const* tiles, int n, uint64_t* end_ns, uint64_t* info, uint64_t timeout_ns) {
  __shared__ int pending_total;
  __shared__ int early_total;
  const uint64_t start = global_ns();
  const long long clock_start = clock64();
  uint32_t pending = 0;  // bit k: tile threadIdx.x + k * blockDim.x not yet changed
  for (int k = 0; k < kMaxPerThread; ++k)
    if (threadIdx.x + k * kSpyThreads < n) pending |= 1u << k;
  if (threadIdx.x == 0) pending_total = early_total = 0;
  __syncthreads();
  uint64_t sweeps = 0;
  bool any_pending = true;
  while (any_pending) {
    uint32_t still = 0;
    for (int k = 0; k < kMaxPerThread; ++k) {
      if (!(pending >> k & 1u)) continue;
      const int i = threadIdx.x + k * kSpyThreads;
      const uint64_t v = load_at_l2(tiles[i]);
      if (v != kSentinel && v != 0) {
        end_ns[i] = global_ns();
        if (sweeps == 0) atomicAdd(&early_total, 1);
      } else {
        still |= 1u << k;
      }
    }
    pending = still;
    ++sweeps;
    // One decision for the whole block (each thread's clock read differs).
    any_pending = __syncthreads_or(pending != 0 && global_ns() - start < timeout_ns);
    __nanosleep(500);
  }
  atomicAdd(&pending_total, __popc(pending));
  __syncthreads();
  if (threadIdx.x == 0 && info) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    info[0] = start, info[1] = global_ns(), info[2] = sweeps, info[3] = sm;
    info[4] = pending_total, info[5] = early_total;
    info[6] = clock_start, info[7] = clock64();
  }
}

__global__ void stamp(uint64_t* out) {
  *out = global_ns();
}

CUcontext spy_context = nullptr;
cudaStream_t spy_stream = nullptr;

}  // namespace

// The spy's green context: the SMs that a split of main_sms (as torch.cuda.green_contexts makes for the
// measured kernel) leaves. Returns the number of those SMs, or a negative CUresult.
extern "C" int spy_open(int main_sms) {
  CUdevice dev;
  CUdevResource all, rest, main_group;
  unsigned groups = 1;
  CUdevResourceDesc desc;
  CUgreenCtx green;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM))
    return -1;
  if (cuDevSmResourceSplitByCount(&main_group, &groups, &all, &rest, 0, static_cast<unsigned>(main_sms)))
    return -2;
  if (cuDevResourceGenerateDesc(&desc, &rest, 1) ||
      cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM))
    return -3;
  if (cuCtxFromGreenCtx(&spy_context, green) || cuCtxPushCurrent(spy_context)) return -4;
  cudaError_t e = cudaStreamCreateWithFlags(&spy_stream, cudaStreamNonBlocking);
  // Load the module now: the first launch in a context can wait for the device's other work (the first
  // measured launch saw none of its tiles change until the spy had timed out).
  if (!e) spy<<<1, kSpyThreads, 0, spy_stream>>>(nullptr, 0, nullptr, nullptr, 0);
  if (!e) e = cudaStreamSynchronize(spy_stream);
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  return e ? -5 : static_cast<int>(rest.sm.smCount);
}

// Starts the spy on its own stream and context and returns at once (cudaError_t).
extern "C" int spy_launch(const void* tiles, int n, void* end_ns, void* info, unsigned long long timeout_ns) {
  if (n > kSpyThreads * kMaxPerThread || cuCtxPushCurrent(spy_context)) return -1;
  spy<<<1, kSpyThreads, 0, spy_stream>>>(static_cast<const uint64_t* const*>(tiles), n,
                                         static_cast<uint64_t*>(end_ns), static_cast<uint64_t*>(info),
                                         timeout_ns);
  const cudaError_t e = cudaGetLastError();
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  return static_cast<int>(e);
}

extern "C" int spy_wait() {
  if (cuCtxPushCurrent(spy_context)) return -1;
  const cudaError_t e = cudaStreamSynchronize(spy_stream);
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  return static_cast<int>(e);
}

// %globaltimer on the caller's stream: the moment the work queued before it there is done.
extern "C" int stamp_on(void* stream, void* out) {
  stamp<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<uint64_t*>(out));
  return static_cast<int>(cudaGetLastError());
}

extern "C" int fill_bytes(void* at, int value, size_t bytes) {
  return static_cast<int>(cudaMemset(at, value, bytes));
}
