// L2 coherence probe: two SMs take turns rewriting one device buffer, so Nsight Compute's partition
// counters show whether a read by one SM finds the other's store or a stale copy.
//   l2_coherence_probe BYTES ROUNDS SM_A SM_B FENCE
// The first block to land on SM A and the first on SM B take turns, A first, ROUNDS turns each: a turn
// loads, adds to and stores back the whole buffer (ld.global.cg / st.global.cg, 16 bytes a thread, 16 KiB
// a step), then fences (membar.gl) and passes the turn through a flag in global memory. The other block
// waits on the flag with volatile loads; with FENCE=1 it fences after seeing it (an acquire, as a kernel
// taking a lock), with FENCE=0 it does not (its loads are plain). Every other block leaves at once.
// When SM A and SM B are attached to different L2 partitions, each line is homed near one of them and read
// through a copy by the other: if a store at home leaves the other partition's copy stale and plain reads
// are served by it, the reader misses once per line (about 1.5 x BYTES / 32 lookup-miss sectors whatever
// ROUNDS); if the store drops or refreshes that copy, every turn's far half misses again (about ROUNDS x
// BYTES / 32).
//   l2_coherence_probe refresh PART C_BYTES SM_OWNER SM_OTHER OTHER_READS
// Does a read that crosses the fabric keep the home partition's line young? The first block on SM_OWNER
// reads buffers A and B (PART bytes each) and passes the turn; the first on SM_OTHER then reads A
// (OTHER_READS=1) or does nothing (0) and passes it back; the owner then reads buffer C (C_BYTES) and A
// again. In the owner's partition A is older than B when C arrives, unless the other SM's reads made it
// younger: with SM_OTHER on the same partition they are near hits and do (the control); on the other
// partition they reach A's lines homed at the owner's partition through the fabric, and whether those
// fetches count as uses decides whether C evicts them before B. The owner's last read of A then finds its
// home lines in L2, or reads them from DRAM again (about PART / 2 bytes more).
// OTHER_READS=2 asks where a line that a far SM's miss brings into its home partition enters that
// partition's replacement order: the owner reads only B, the other SM reads A, the owner reads C and A
// again. A's lines homed at the owner's partition came in for the other SM; as the most recent they
// outlast B when C pushes lines out, as the oldest they leave first and the owner reads them from DRAM.
//   l2_coherence_probe share PART C_BYTES SM_OWNER SM_OTHER OTHER_READS
// How a partition's home lines and its copies of far-homed lines give way to each other: the owner reads A
// and B (PART bytes each) and C, then A backwards (so the lines of A still there are found before the
// misses push them out). The other SM reads each buffer just after the owner (OTHER_READS=1), just before
// (2) or never (0). The last read's lookup misses in the owner's partition split into A's home lines there
// (read from DRAM again) and its copies of lines homed across the fabric (fetched through it, from their
// home, where the other partition still holds them).
// Prints one RESULT line (ran=11 when both roles ran); the run script profiles the launch.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_check.h"

constexpr int kThreads = 1024;
constexpr size_t kChunk = kThreads * sizeof(int4);
constexpr unsigned long long kWaitNs = 2000000000ull;  // a role that waits longer gives up (no hang)

__device__ unsigned sm_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %smid;" : "=r"(id));
  return id;
}

__device__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 waits until the flag says `step`; false when it waited too long (the other role never ran).
__device__ bool wait_for_turn(volatile int* turn, int step) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    const unsigned long long start = global_timer();
    ok = 1;
    while (*turn != step)
      if (global_timer() - start > kWaitNs) {
        ok = 0;
        break;
      }
  }
  __syncthreads();
  return ok != 0;
}

// The first block on SM A takes role 0, the first on SM B role 1; every other block gets -1 and leaves.
__device__ int claim_role(unsigned sm_a, unsigned sm_b, int* claimed) {
  __shared__ int role;
  if (threadIdx.x == 0) {
    const unsigned sm = sm_id();
    const int r = sm == sm_a ? 0 : sm == sm_b ? 1 : -1;
    role = r >= 0 && atomicCAS(claimed + r, 0, 1) == 0 ? r : -1;
  }
  __syncthreads();
  return role;
}

// Waits for turn `step`; false (and gave_up set) when the other role never passed it.
__device__ bool take_turn(volatile int* turn, int step, int* gave_up) {
  if (wait_for_turn(turn, step)) return true;
  if (threadIdx.x == 0) *gave_up = 1;
  return false;
}

// The turn's stores and loads are done and have reached L2 before the flag says `next`.
__device__ void pass_turn(volatile int* turn, int next) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    *turn = next;
  }
}

__global__ void coherence_kernel(int4* __restrict__ buffer, size_t chunks, int rounds, unsigned sm_a,
                                 unsigned sm_b, int fence, int* __restrict__ claimed, volatile int* turn,
                                 int* __restrict__ gave_up) {
  const int role = claim_role(sm_a, sm_b, claimed);
  if (role < 0) return;
  for (int step = role; step < 2 * rounds; step += 2) {
    if (!take_turn(turn, step, gave_up)) return;
    if (fence) __threadfence();
    for (size_t i = 0; i < chunks; ++i) {
      int4* at = buffer + i * kThreads + threadIdx.x;
      int4 v = __ldcg(at);
      v.x += 1;
      __stcg(at, v);
    }
    pass_turn(turn, step + 1);
  }
}

// Reads chunks begin .. begin + count - 1, the last first when `backwards`.
__device__ unsigned read_chunks(const int4* buffer, size_t begin, size_t count, bool backwards = false) {
  unsigned acc = 0;
  for (size_t k = 0; k < count; ++k) {
    const size_t i = backwards ? count - 1 - k : k;
    const int4 v = __ldcg(buffer + (begin + i) * kThreads + threadIdx.x);
    acc ^= static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
  }
  return acc;
}

__global__ void refresh_kernel(const int4* __restrict__ buffer, size_t part, size_t c_chunks,
                               unsigned sm_owner, unsigned sm_other, int other_reads,
                               int* __restrict__ claimed, volatile int* turn, int* __restrict__ gave_up,
                               unsigned* __restrict__ sink) {
  const int role = claim_role(sm_owner, sm_other, claimed);
  if (role < 0) return;
  unsigned acc = 0;
  for (int step = role; step <= 2; step += 2) {  // the owner takes turns 0 and 2, the other turn 1
    if (!take_turn(turn, step, gave_up)) return;
    if (step == 0)
      acc ^= other_reads == 2 ? read_chunks(buffer, part, part) : read_chunks(buffer, 0, 2 * part);
    if (step == 1 && other_reads) acc ^= read_chunks(buffer, 0, part);
    if (step == 2) acc ^= read_chunks(buffer, 2 * part, c_chunks), acc ^= read_chunks(buffer, 0, part);
    pass_turn(turn, step + 1);
  }
  sink[role * kThreads + threadIdx.x] = acc;
}

// The turns of `share`, in order: who reads (0 the owner, 1 the other) and what (kAB: A and B, kC: C, kABack:
// A backwards). OTHER_READS=0: the owner alone; 1: the other reads each buffer just after the owner; 2: just
// before.
// OTHER_READS=3 asks whether a hit on a copy is a use of the home line: the owner reads A, the other reads A
// (its fetches across the fabric renew A's home lines and leave copies), the owner reads B, the other reads
// A again (hits on its copies, nothing crosses the fabric), then the owner reads C and A backwards. If those
// hits renew A's home lines, they are younger than B and C takes B first; if not, C takes A's home lines
// first and the owner reads them from DRAM again. OTHER_READS=4 is the same without the other's second read.
enum Read { kAB, kC, kABack, kA, kB };
struct Turn {
  int who;
  Read what;
};
__constant__ Turn kShareTurns[5][6] = {
    {{0, kAB}, {0, kC}, {0, kABack}},
    {{0, kAB}, {1, kAB}, {0, kC}, {1, kC}, {0, kABack}},
    {{1, kAB}, {0, kAB}, {1, kC}, {0, kC}, {0, kABack}},
    {{0, kA}, {1, kA}, {0, kB}, {1, kA}, {0, kC}, {0, kABack}},
    {{0, kA}, {1, kA}, {0, kB}, {0, kC}, {0, kABack}}};
__constant__ int kShareTurnCount[5] = {3, 5, 5, 6, 5};

__device__ unsigned share_read(const int4* buffer, size_t part, size_t c_chunks, Read what) {
  if (what == kAB) return read_chunks(buffer, 0, 2 * part);
  if (what == kA) return read_chunks(buffer, 0, part);
  if (what == kB) return read_chunks(buffer, part, part);
  if (what == kC) return read_chunks(buffer, 2 * part, c_chunks);
  return read_chunks(buffer, 0, part, true);
}

__global__ void share_kernel(const int4* __restrict__ buffer, size_t part, size_t c_chunks, unsigned sm_owner,
                             unsigned sm_other, int other_reads, int* __restrict__ claimed,
                             volatile int* turn, int* __restrict__ gave_up, unsigned* __restrict__ sink) {
  const int role = claim_role(sm_owner, sm_other, claimed);
  if (role < 0) return;
  unsigned acc = 0;
  for (int step = 0; step < kShareTurnCount[other_reads]; ++step) {
    const Turn t = kShareTurns[other_reads][step];
    if (t.who != role) continue;
    if (!take_turn(turn, step, gave_up)) return;
    acc ^= share_read(buffer, part, c_chunks, t.what);
    pass_turn(turn, step + 1);
  }
  sink[role * kThreads + threadIdx.x] = acc;
}

// Reads every line of `buffer` once (all blocks, grid-stride): run before a probe under
// `ncu --cache-control none`, it leaves L2 holding only clean lines older than the probe's.
__global__ void evict_kernel(const int4* __restrict__ buffer, size_t count, unsigned* __restrict__ sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(buffer + i);
    acc ^= static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
  }
  if (acc == 0x12345678u) sink[0] = acc;  // never true in practice; keeps the loads
}

// PROBE_EVICT_BYTES (environment): before the probe's launch, evict_kernel reads a buffer that large.
void evict_first(unsigned* sink) {
  const char* bytes = std::getenv("PROBE_EVICT_BYTES");
  if (bytes == nullptr) return;
  const size_t count = std::strtoull(bytes, nullptr, 10) / sizeof(int4);
  int4* evict = nullptr;
  CHECK(cudaMalloc(&evict, count * sizeof(int4)));
  CHECK(cudaMemset(evict, 0x3c, count * sizeof(int4)));
  evict_kernel<<<1024, kThreads>>>(evict, count, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(evict));
}

int run_turns(char** argv, bool share) {
  const size_t part = std::strtoull(argv[2], nullptr, 10) / kChunk;
  const size_t c_chunks = std::strtoull(argv[3], nullptr, 10) / kChunk;
  const unsigned sm_owner = static_cast<unsigned>(std::atoi(argv[4]));
  const unsigned sm_other = static_cast<unsigned>(std::atoi(argv[5]));
  const int other_reads = std::atoi(argv[6]);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const unsigned sms = static_cast<unsigned>(prop.multiProcessorCount);
  if (part < 1 || c_chunks < 1 || sm_owner == sm_other || sm_owner >= sms || sm_other >= sms ||
      other_reads < 0 || other_reads > (share ? 4 : 2)) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const size_t chunks = 2 * part + c_chunks;
  // PROBE_OFFSET_BYTES (environment, a multiple of 16 KiB): the buffers start that far into the allocation
  // (cudaMalloc's are 2 MiB aligned), to see whether what a set keeps moves with the pages.
  const char* offset_env = std::getenv("PROBE_OFFSET_BYTES");
  const size_t offset_chunks = offset_env ? std::strtoull(offset_env, nullptr, 10) / kChunk : 0;
  int4* allocation = nullptr;
  int* flags = nullptr;  // claimed[2], turn, gave_up
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&allocation, (offset_chunks + chunks) * kChunk));
  int4* buffer = allocation + offset_chunks * kThreads;
  CHECK(cudaMalloc(&flags, 4 * sizeof(int)));
  CHECK(cudaMalloc(&sink, 2 * kThreads * sizeof(unsigned)));
  // PROBE_NO_MEMSET (environment): the buffers are read as cudaMalloc left them, with no stores before.
  if (std::getenv("PROBE_NO_MEMSET") == nullptr)
    CHECK(cudaMemset(allocation, 0x5a, (offset_chunks + chunks) * kChunk));
  CHECK(cudaMemset(flags, 0, 4 * sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  evict_first(sink);
  if (share)
    share_kernel<<<8 * prop.multiProcessorCount, kThreads>>>(buffer, part, c_chunks, sm_owner, sm_other,
                                                             other_reads, flags, flags + 2, flags + 3, sink);
  else
    refresh_kernel<<<8 * prop.multiProcessorCount, kThreads>>>(
        buffer, part, c_chunks, sm_owner, sm_other, other_reads, flags, flags + 2, flags + 3, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int got[4] = {0, 0, 0, 0};
  CHECK(cudaMemcpy(got, flags, sizeof(got), cudaMemcpyDeviceToHost));
  std::printf(
      "RESULT mode=%s:%u:%u:reads%d part_bytes=%zu c_bytes=%zu blocks=2 ran=%d%d turns=%d gave_up=%d\n",
      share ? "share" : "refresh", sm_owner, sm_other, other_reads, part * kChunk, c_chunks * kChunk, got[0],
      got[1], got[2], got[3]);
  CHECK(cudaFree(allocation));
  CHECK(cudaFree(flags));
  CHECK(cudaFree(sink));
  return got[0] && got[1] && !got[3] ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc >= 7 && std::string(argv[1]) == "refresh") return run_turns(argv, false);
  if (argc >= 7 && std::string(argv[1]) == "share") return run_turns(argv, true);
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: l2_coherence_probe BYTES ROUNDS SM_A SM_B FENCE\n"
                 "       l2_coherence_probe refresh|share PART C_BYTES SM_OWNER SM_OTHER OTHER_READS\n");
    return 2;
  }
  const size_t bytes = std::strtoull(argv[1], nullptr, 10);
  const int rounds = std::atoi(argv[2]);
  const unsigned sm_a = static_cast<unsigned>(std::atoi(argv[3]));
  const unsigned sm_b = static_cast<unsigned>(std::atoi(argv[4]));
  const int fence = std::atoi(argv[5]);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const unsigned sms = static_cast<unsigned>(prop.multiProcessorCount);
  if (bytes < kChunk || rounds < 1 || sm_a == sm_b || sm_a >= sms || sm_b >= sms) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const size_t chunks = bytes / kChunk;
  int4* buffer = nullptr;
  int* flags = nullptr;  // claimed[2], turn, gave_up
  CHECK(cudaMalloc(&buffer, chunks * kChunk));
  CHECK(cudaMalloc(&flags, 4 * sizeof(int)));
  CHECK(cudaMemset(buffer, 0x5a, chunks * kChunk));
  CHECK(cudaMemset(flags, 0, 4 * sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  coherence_kernel<<<8 * prop.multiProcessorCount, kThreads>>>(buffer, chunks, rounds, sm_a, sm_b, fence,
                                                               flags, flags + 2, flags + 3);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int got[4] = {0, 0, 0, 0};
  CHECK(cudaMemcpy(got, flags, sizeof(got), cudaMemcpyDeviceToHost));
  std::printf(
      "RESULT mode=coherence:%u:%u:fence%d bytes=%zu passes=%d blocks=2 ran=%d%d turns=%d gave_up=%d\n", sm_a,
      sm_b, fence, chunks * kChunk, rounds, got[0], got[1], got[2], got[3]);
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(flags));
  return got[0] && got[1] && !got[3] ? 0 : 1;
}
