// L2 behaviour probe: thread blocks stream one device buffer several times, so Nsight Compute's DRAM and
// L2 counters show the capacity that data sees and what the replacement does when it does not fit.
//   l2_probe MODE BYTES PASSES [BLOCKS]
// MODE:
//   single   one block reads the buffer PASSES times (the capacity one SM's data sees)
//   shared   BLOCKS blocks each read the whole buffer PASSES times, all from offset 0 (data every SM
//            reads, in step: FlashAttention's K and V)
//   spread   as shared, block b starting at offset b * BYTES / BLOCKS and wrapping (readers out of step)
//   private  block b reads its own BYTES / BLOCKS slice PASSES times
//   wprivate block b writes its own BYTES / BLOCKS slice PASSES times (what stays dirty in L2)
//   wsingle  one block writes the buffer PASSES times
//   rmw      block b reads, adds to and writes back its own BYTES / BLOCKS slice PASSES times (a dirty
//            footprint rewritten, as an accumulator in global memory)
//   rmwspread every block reads, adds to and writes back the whole buffer PASSES times, block b from offset
//            b * BYTES / BLOCKS and wrapping (a shared accumulator every SM rewrites in turn, as the
//            memory-efficient backward's dQ workspace)
//   rmwhalf  GROUP_COUNT (environment, default 1; it divides BLOCKS) groups of consecutive blocks, each
//            with its own BYTES / GROUP_COUNT of the buffer: a first half only read, a second rewritten. At
//            every step a block reads a chunk of its group's first half, then reads, adds to and writes back
//            the chunk at the same place in the second half, PASSES times over the halves, the group's block
//            r starting at r / (its blocks) of them and wrapping (the memory-efficient backward: per head,
//            Q_i and dO_i read and the dQ workspace tile rewritten by every block of the head, out of step)
//   rmwlock  as rmwhalf, each rewrite under a lock per chunk, as the memory-efficient backward's AtomicLock
//            takes its dQ tile's: thread 0 spins on atomicCAS (__nanosleep(40) between attempts),
//            __threadfence, plain loads and stores of the chunk, __threadfence, st.release.gpu of the lock
//            (SASS: ATOM.E.CAS.STRONG.GPU; MEMBAR.SC.GPU and CCTL.IVALL; MEMBAR.ALL.GPU, STG.E.STRONG.GPU)
//   rmwfence as rmwlock with the fences and plain accesses but no lock (what the fences alone do)
//   rmwplain as rmwhalf with plain (weak) loads and stores of the rewritten chunk, no fence, no lock
//   rmwcgfence as rmwfence with rmwhalf's ld.global.cg and st.global.cg (strong at GPU scope)
//   rfence   as single (BLOCKS default 1), each block's reads of a chunk followed by __syncthreads and
//            __threadfence: whether a fence drops the copies an L2 partition keeps of the other's lines
//   rfenceasync as rfence with cp.async.cg (LDGSTS.E.BYPASS.LTC128B, the memory-efficient backward's tile
//            loads) into shared memory instead of LDG: whether a fence makes those loads check copies too
//   rfenceweak as rfence with plain weak loads (ld.global) where rfence's are ld.global.cg: whether a
//            fence makes only strong loads check copies
//   rfenceotherweak, rfenceotherasync as rfenceother with block 0's loads weak or cp.async
//   rfenceother block 0 reads the buffer PASSES times as single does; blocks 1 to BLOCKS - 1 (default 8)
//            issue __threadfence in a loop until it is done: whether other SMs' fences drop its copies
//   wthenread block b writes its slice of the buffer's first quarter, reads its slice of the other three
//            quarters PASSES times, then reads its first-quarter slice again: whether lines left dirty
//            leave the L2 sooner than clean ones
//   rthenread as wthenread with the first quarter read, not written (the clean twin)
//   retouch  one block reads parts 0 and 1 of a buffer of 2 + PASSES parts of BYTES each, then PASSES
//            times reads part 0 again and a part it has not read yet, then part 0 once more: LRU keeps part
//            0 (always used more recently than the part read before the last), a pseudo-LRU loses some of it
//            each round (how many DRAM reads beyond the buffer's size tell the replacement apart)
//   stale    BLOCKS blocks (default 1) each read a hot part of HOT_BYTES (environment) HOT_PASSES times, then
//            the buffer of BYTES that follows it PASSES times, never the hot part again, all from offset 0:
//            under LRU the dead hot part, now the oldest, goes first when the buffer needs room; a policy
//            that protects lines by their past hits (RRIP's kind) keeps it and lets the buffer's own lines
//            evict each other (DRAM reads beyond HOT_BYTES + BYTES)
//   wbetween BLOCKS blocks (default 1) each read a part of HOT_BYTES HOT_PASSES times, store the BYTES that
//            follow it PASSES times, then read the part once more: a store reaches the line's home
//            partition; whether it also takes room in the writer's partition (as a read's copy of a line
//            homed in the other partition does) shows as the part's lines homed near the writer read again
//            from DRAM once the written lines no longer fit beside it there
//   rbetween as wbetween with the BYTES loaded, not stored (the twin whose copies do take that room)
//   pair     (PAIR="A,B" in the environment) the first block to land on SM A reads the buffer's first half
//            PASSES times, the first on SM B its second half; every other block leaves at once (BLOCKS
//            default 8 per SM, so that both SMs get one). Whether A and B are attached to the same L2
//            partition: then that partition holds both halves' near lines and copies and thrashes while the
//            other keeps its home lines; on different partitions both thrash.
//   scatter  one block reads BYTES of 128-byte lines scattered over a buffer 8 times as large (line i at
//            8 i + splitmix64(i) mod 8) PASSES times: the sets those lines fall in are as good as random,
//            so how many sets overflow at a given footprint depends on the L2's associativity (a
//            contiguous buffer fills the sets evenly and hides it)
//   heads    one block reads the first BYTES / (2 HEADS) of every head's K and V, in the order of the
//            project's FlashAttention kernels (head by head; per 16 KiB key block K, then V), PASSES times.
//            Q, K, V and O are allocated as the harness allocates them (HEADS x HEAD_BYTES each,
//            HEAD_BYTES from the environment, default 8 MiB: 32,768 keys of d = 128 in fp16), so the lines
//            land where the kernels' lines do: whether the L2 fills its sets as evenly with that layout as
//            with one contiguous buffer (`single`)
//   copies   one block reads COPIES blocks of BYTES each, block i at i * STRIDE (COPIES and STRIDE from the
//            environment), PASSES times: copies that land in the same sets overflow them once more than
//            16 of them share a set, so the misses tell over how many set groups the address bits that
//            STRIDE sets spread them (a bit the set index ignores keeps them all in one group)
// With OFFSET_BYTES=B in the environment, the buffer of the modes above starts B bytes into its allocation.
// With STAGGER_NS=S in the environment, block b of single, shared, spread and private starts reading S * b ns
// after block 0 began (every block waits for block 0's start time): how far apart two readers of one line
// may be for the L2's request coalescer to merge their requests.
// With TIMES=file in the environment, each block's SM and the global timer at its start and at the end of
// every pass are written there (how far co-resident blocks drift apart); with SAMPLES=S as well, at S evenly
// spaced points of every pass instead of its end only (whether out-of-step readers bunch up).
// Each thread loads 16 bytes per step with ld.global.cg (L2 only), a block 16 KiB per step. Prints one
// RESULT line; the run script profiles the launch named l2_probe_kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_check.h"

constexpr int kThreads = 1024;
constexpr size_t kChunk = kThreads * sizeof(int4);  // bytes a block reads per step

__device__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__device__ unsigned sm_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %smid;" : "=r"(id));
  return id;
}

// scatter: each step 128 lines, 8 threads a line, 16 bytes each; the line indices come from `lines`.
__global__ void scatter_kernel(const int4* __restrict__ buffer, const unsigned* __restrict__ lines,
                               size_t count, int passes, unsigned* __restrict__ sink) {
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p)
    for (size_t step = 0; step < count / 128; ++step) {
      const size_t line = __ldg(lines + step * 128 + threadIdx.x / 8);
      const int4 v = __ldcg(buffer + line * 8 + threadIdx.x % 8);
      acc ^= static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
    }
  sink[threadIdx.x] = acc;
}

unsigned long long splitmix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

int run_scatter(size_t bytes, int passes, const cudaDeviceProp& prop) {
  const size_t count = bytes / 128 / 128 * 128;  // whole steps of 128 lines
  std::vector<unsigned> lines(count);
  for (size_t i = 0; i < count; ++i) lines[i] = static_cast<unsigned>(8 * i + splitmix64(i) % 8);
  int4* buffer = nullptr;
  unsigned *table = nullptr, *sink = nullptr;
  CHECK(cudaMalloc(&buffer, count * 8 * 128));
  CHECK(cudaMalloc(&table, count * sizeof(unsigned)));
  CHECK(cudaMalloc(&sink, kThreads * sizeof(unsigned)));
  CHECK(cudaMemset(buffer, 0x5a, count * 8 * 128));
  CHECK(cudaMemcpy(table, lines.data(), count * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaDeviceSynchronize());
  scatter_kernel<<<1, kThreads>>>(buffer, table, count, passes, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("RESULT mode=scatter bytes=%zu passes=%d blocks=1 ms=0 sms=%d l2=%d\n", count * 128, passes,
              prop.multiProcessorCount, prop.l2CacheSize);
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(table));
  CHECK(cudaFree(sink));
  return 0;
}

// heads: K and V chunk j of head h at (h * head_chunks + j) * kChunk.
__global__ void heads_kernel(const int4* __restrict__ k, const int4* __restrict__ v, size_t head_chunks,
                             size_t window, int heads, int passes, unsigned* __restrict__ sink) {
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p)
    for (int h = 0; h < heads; ++h)
      for (size_t j = 0; j < window; ++j) {
        const size_t at = (h * head_chunks + j) * kThreads + threadIdx.x;
        const int4 a = __ldcg(k + at), b = __ldcg(v + at);
        acc ^= static_cast<unsigned>(a.x ^ a.y ^ b.z ^ b.w);
      }
  sink[threadIdx.x] = acc;
}

// copies: `count` chunks at chunk offset i * stride_chunks for each copy i.
__global__ void copies_kernel(const int4* __restrict__ buffer, size_t count, size_t stride_chunks, int copies,
                              int passes, unsigned* __restrict__ sink) {
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p)
    for (int i = 0; i < copies; ++i)
      for (size_t j = 0; j < count; ++j) {
        const int4 a = __ldcg(buffer + (i * stride_chunks + j) * kThreads + threadIdx.x);
        acc ^= static_cast<unsigned>(a.x ^ a.w);
      }
  sink[threadIdx.x] = acc;
}

int run_copies(size_t bytes, int passes, const cudaDeviceProp& prop) {
  const char* copies_text = std::getenv("COPIES");
  const char* stride_text = std::getenv("STRIDE");
  const int copies = copies_text ? std::atoi(copies_text) : 0;
  const size_t stride = stride_text ? std::strtoull(stride_text, nullptr, 10) : 0;
  const size_t count = bytes / kChunk;
  if (copies < 1 || passes < 1 || count < 1 || stride % kChunk != 0 || stride < count * kChunk) {
    std::fprintf(stderr, "copies: COPIES >= 1, STRIDE a multiple of 16 KiB and >= BYTES >= 16 KiB\n");
    return 2;
  }
  const size_t total = (copies - 1) * stride + count * kChunk;
  int4* buffer = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&buffer, total));
  CHECK(cudaMalloc(&sink, kThreads * sizeof(unsigned)));
  for (int i = 0; i < copies; ++i)
    CHECK(cudaMemset(reinterpret_cast<char*>(buffer) + i * stride, 0x5a, count * kChunk));
  CHECK(cudaDeviceSynchronize());
  copies_kernel<<<1, kThreads>>>(buffer, count, stride / kChunk, copies, passes, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("RESULT mode=copies:%d:%zu bytes=%zu passes=%d blocks=1 ms=0 sms=%d l2=%d\n", copies, stride,
              copies * count * kChunk, passes, prop.multiProcessorCount, prop.l2CacheSize);
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(sink));
  return 0;
}

int run_heads(size_t bytes, int passes, int heads, const cudaDeviceProp& prop) {
  const char* head_text = std::getenv("HEAD_BYTES");
  const size_t head_bytes = head_text ? std::strtoull(head_text, nullptr, 10) : size_t{8} << 20;
  const size_t head_chunks = head_bytes / kChunk;
  const size_t window = heads > 0 ? bytes / 2 / static_cast<size_t>(heads) / kChunk : 0;
  if (heads < 1 || passes < 1 || window < 1 || window > head_chunks) {
    std::fprintf(stderr, "heads: HEADS >= 1, 1 <= BYTES / (2 HEADS) <= HEAD_BYTES, whole 16 KiB chunks\n");
    return 2;
  }
  const size_t tensor = static_cast<size_t>(heads) * head_chunks * kChunk;
  int4 *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  unsigned* sink = nullptr;
  for (int4** t : {&q, &k, &v, &o}) CHECK(cudaMalloc(t, tensor));
  CHECK(cudaMalloc(&sink, kThreads * sizeof(unsigned)));
  for (int4* t : {q, k, v, o}) CHECK(cudaMemset(t, 0x5a, tensor));
  CHECK(cudaDeviceSynchronize());
  heads_kernel<<<1, kThreads>>>(k, v, head_chunks, window, heads, passes, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("RESULT mode=heads:%d:%zu bytes=%zu passes=%d blocks=1 ms=0 sms=%d l2=%d\n", heads, head_bytes,
              2 * static_cast<size_t>(heads) * window * kChunk, passes, prop.multiProcessorCount,
              prop.l2CacheSize);
  for (int4* t : {q, k, v, o}) CHECK(cudaFree(t));
  CHECK(cudaFree(sink));
  return 0;
}

__device__ unsigned read_chunks(int4* buffer, size_t begin, size_t count) {
  unsigned acc = 0;
  for (size_t i = 0; i < count; ++i) {
    const int4 v = __ldcg(buffer + (begin + i) * kThreads + threadIdx.x);
    acc ^= static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
  }
  return acc;
}

// Modes 6-9 (no timestamps). Blocks that rewrite the same chunk at once race on its values: only the
// traffic matters here.
__device__ void rewrite_modes(int4* buffer, size_t chunks, int passes, int mode, unsigned* sink) {
  const size_t blocks = gridDim.x;
  unsigned acc = 0;
  if (mode == 6 || mode == 7) {
    const size_t count = mode == 6 ? chunks / blocks : chunks;
    const size_t begin = mode == 6 ? blockIdx.x * count : 0;
    const size_t start = mode == 7 ? blockIdx.x * chunks / blocks : 0;
    for (int p = 0; p < passes; ++p)
      for (size_t i = 0; i < count; ++i) {
        int4* at = buffer + (begin + (start + i) % count) * kThreads + threadIdx.x;
        int4 v = __ldcg(at);
        v.x += 1;
        __stcg(at, v);
      }
  } else {
    const size_t quarter = chunks / 4 / blocks, rest = (chunks - chunks / 4) / blocks;
    const size_t first = blockIdx.x * quarter, stream = chunks / 4 + blockIdx.x * rest;
    if (mode == 8)
      for (size_t i = 0; i < quarter; ++i)
        __stcg(buffer + (first + i) * kThreads + threadIdx.x, make_int4(static_cast<int>(i), 1, 2, 3));
    else
      acc ^= read_chunks(buffer, first, quarter);
    for (int p = 0; p < passes; ++p) acc ^= read_chunks(buffer, stream, rest);
    acc ^= read_chunks(buffer, first, quarter);
  }
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

// Modes 14-18, rmwhalf, rmwlock, rmwfence, rmwplain and rmwcgfence: see the header. `locks`: a word per chunk
// of the written halves, each in its own 128-byte line (rmwlock only).
__device__ void half_rewritten_mode(int4* buffer, size_t chunks, int passes, int groups, int mode, int* locks,
                                    unsigned* sink) {
  const size_t per_group = gridDim.x / groups, group = blockIdx.x / per_group, rank = blockIdx.x % per_group;
  const size_t half = chunks / groups / 2, read_half = group * 2 * half, written_half = read_half + half;
  const size_t start = rank * half / per_group;
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p)
    for (size_t i = 0; i < half; ++i) {
      const size_t at = (start + i) % half;
      acc ^= read_chunks(buffer, read_half + at, 1);
      int4* written = buffer + (written_half + at) * kThreads + threadIdx.x;
      const bool fenced = mode == 15 || mode == 16 || mode == 18, strong = mode == 14 || mode == 18;
      int* lock = mode == 15 ? locks + (group * half + at) * 32 : nullptr;
      if (mode == 15 && threadIdx.x == 0)
        while (atomicCAS(lock, 0, 1) != 0) __nanosleep(40);
      if (fenced) {
        __syncthreads();
        __threadfence();
      }
      int4 v = strong ? __ldcg(written) : *written;
      v.x += 1;
      if (strong)
        __stcg(written, v);
      else
        *written = v;
      if (fenced) {
        __threadfence();
        __syncthreads();
      }
      if (mode == 15 && threadIdx.x == 0)
        asm volatile("st.global.release.gpu.b32 [%0], %1;" ::"l"(lock), "r"(0));
    }
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

// Chunks read between two fences in rfence and rfenceasync (FENCE_EVERY in the environment, default 1).
__device__ int fence_every = 1;
__device__ unsigned long long stagger_ns = 0;
__device__ unsigned long long stagger_epoch = 0;  // block 0's start; 0: not yet known

// STAGGER_NS: block b waits until stagger_ns * b after block 0's start (all blocks resident at once).
__device__ void wait_for_stagger() {
  if (stagger_ns == 0) return;
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) atomicExch(&stagger_epoch, global_timer());
    volatile unsigned long long* epoch = &stagger_epoch;
    while (*epoch == 0) {
    }
    const unsigned long long until = *epoch + stagger_ns * blockIdx.x;
    while (global_timer() < until) {
    }
  }
  __syncthreads();
}

// The load of one thread's 16 bytes of chunk i in the fenced read modes: `ld.global.cg` (LDG, as
// read_chunks), cp.async.cg into shared memory (LDGSTS, the memory-efficient backward's tile loads) or a
// plain weak `ld.global`.
enum class FencedLoad { Cg, Async, Weak };

__device__ unsigned fenced_load(const int4* buffer, size_t i, FencedLoad kind, int4* staged) {
  const int4* from = buffer + i * kThreads + threadIdx.x;
  int4 v;
  if (kind == FencedLoad::Async) {
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(staged + threadIdx.x));
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(to), "l"(from));
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
    v = staged[threadIdx.x];
  } else if (kind == FencedLoad::Weak) {
    asm volatile("ld.global.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(from));
  } else {
    v = __ldcg(from);
  }
  return static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
}

// Modes 19-24, the fenced read modes: see the header. `done` is a zeroed word.
__device__ void fenced_read_mode(int4* buffer, size_t chunks, int passes, int mode, int* done,
                                 unsigned* sink) {
  const bool others_fence = mode == 20 || mode == 23 || mode == 24;
  const FencedLoad kind = mode == 21 || mode == 24   ? FencedLoad::Async
                          : mode == 22 || mode == 23 ? FencedLoad::Weak
                                                     : FencedLoad::Cg;
  unsigned acc = 0;
  if (others_fence && blockIdx.x > 0) {
    while (atomicAdd(done, 0) == 0) {
      __threadfence();
      __nanosleep(100);
    }
    return;
  }
  __shared__ int4 staged[kThreads];
  for (int p = 0; p < passes; ++p)
    for (size_t i = 0; i < chunks; ++i) {
      acc ^= fenced_load(buffer, i, kind, staged);
      if (!others_fence && (i + 1) % fence_every == 0) {
        __syncthreads();
        __threadfence();
      }
    }
  __syncthreads();
  if (others_fence && threadIdx.x == 0) atomicExch(done, 1);
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

// Mode 10, retouch: see the header. `chunks` is one part.
__device__ void retouch_mode(int4* buffer, size_t chunks, int passes, unsigned* sink) {
  unsigned acc = read_chunks(buffer, 0, 2 * chunks);
  for (int p = 0; p < passes; ++p) {
    acc ^= read_chunks(buffer, 0, chunks);
    acc ^= read_chunks(buffer, (2 + static_cast<size_t>(p)) * chunks, chunks);
  }
  acc ^= read_chunks(buffer, 0, chunks);
  sink[threadIdx.x] = acc;
}

// Mode 11, stale: see the header. `chunks` is the buffer after the hot part's `hot_chunks`.
__device__ void stale_mode(int4* buffer, size_t hot_chunks, int hot_passes, size_t chunks, int passes,
                           unsigned* sink) {
  unsigned acc = 0;
  for (int p = 0; p < hot_passes; ++p) acc ^= read_chunks(buffer, 0, hot_chunks);
  for (int p = 0; p < passes; ++p) acc ^= read_chunks(buffer, hot_chunks, chunks);
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

// Modes 12 and 13, wbetween and rbetween: see the header.
__device__ void between_mode(int4* buffer, size_t hot_chunks, int hot_passes, size_t chunks, int passes,
                             bool store, unsigned* sink) {
  unsigned acc = 0;
  for (int p = 0; p < hot_passes; ++p) acc ^= read_chunks(buffer, 0, hot_chunks);
  for (int p = 0; p < passes; ++p) {
    if (!store) {
      acc ^= read_chunks(buffer, hot_chunks, chunks);
      continue;
    }
    for (size_t i = 0; i < chunks; ++i)
      __stcg(buffer + (hot_chunks + i) * kThreads + threadIdx.x, make_int4(p, static_cast<int>(i), 1, 2));
  }
  acc ^= read_chunks(buffer, 0, hot_chunks);
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

// pair: see the header. `claimed` (two zeroed words) lets one block per target SM do the work.
__global__ void pair_kernel(int4* __restrict__ buffer, size_t chunks, int passes, unsigned sm_a,
                            unsigned sm_b, int* __restrict__ claimed, unsigned* __restrict__ sink) {
  __shared__ int mine;
  const unsigned sm = sm_id();
  if (threadIdx.x == 0) {
    const int half = sm == sm_a ? 0 : sm == sm_b ? 1 : -1;
    mine = half >= 0 && atomicCAS(claimed + half, 0, 1) == 0 ? half : -1;
  }
  __syncthreads();
  if (mine < 0) return;
  const size_t count = chunks / 2;
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p) acc ^= read_chunks(buffer, static_cast<size_t>(mine) * count, count);
  sink[mine * kThreads + threadIdx.x] = acc;
}

__global__ void l2_probe_kernel(int4* __restrict__ buffer, size_t chunks, int passes, int mode,
                                unsigned* __restrict__ sink, unsigned long long* __restrict__ times,
                                int samples, size_t hot_chunks, int hot_passes, int groups, int* locks) {
  const size_t blocks = gridDim.x;
  size_t begin = 0, count = chunks, start = 0;
  unsigned long long* my_times = times ? times + blockIdx.x * (passes * samples + 2) : nullptr;
  if (my_times && threadIdx.x == 0) my_times[0] = sm_id(), my_times[1] = global_timer();
  if (mode == 4 || mode == 5) {  // writers
    if (mode == 4) count = chunks / blocks, begin = blockIdx.x * count;
    for (int p = 0; p < passes; ++p) {
      for (size_t i = 0; i < count; ++i)
        __stcg(buffer + (begin + i) * kThreads + threadIdx.x, make_int4(p, static_cast<int>(i), 1, 2));
      if (my_times && threadIdx.x == 0) my_times[2 + p * samples + samples - 1] = global_timer();
    }
    return;
  }
  if (mode == 10) {
    retouch_mode(buffer, chunks, passes, sink);
    return;
  }
  if (mode == 11) {
    stale_mode(buffer, hot_chunks, hot_passes, chunks, passes, sink);
    return;
  }
  if (mode == 12 || mode == 13) {
    between_mode(buffer, hot_chunks, hot_passes, chunks, passes, mode == 12, sink);
    return;
  }
  if (mode >= 19 && mode <= 24) {
    fenced_read_mode(buffer, chunks, passes, mode, locks, sink);
    return;
  }
  if (mode >= 14) {
    half_rewritten_mode(buffer, chunks, passes, groups, mode, locks, sink);
    return;
  }
  if (mode >= 6) {
    rewrite_modes(buffer, chunks, passes, mode, sink);
    return;
  }
  if (mode == 3) {  // private slice
    count = chunks / blocks;
    begin = blockIdx.x * count;
  } else if (mode == 2) {  // spread phase
    start = blockIdx.x * chunks / blocks;
  }
  wait_for_stagger();
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p) {
    int sample = 0;
    size_t mark = count / samples;  // record after this many chunks of the pass
    for (size_t i = 0; i < count; ++i) {
      const size_t chunk = begin + (start + i) % count;
      const int4 v = __ldcg(buffer + chunk * kThreads + threadIdx.x);
      acc ^= static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
      if (my_times && i + 1 == mark && sample < samples - 1) {
        __syncthreads();  // a sample point is passed when the block's loads before it have returned
        if (threadIdx.x == 0) my_times[2 + p * samples + sample] = global_timer();
        ++sample;
        mark = count * (sample + 1) / samples;
      }
    }
    if (my_times) {
      __syncthreads();  // the pass ends when the block's last load has returned
      if (threadIdx.x == 0) my_times[2 + p * samples + samples - 1] = global_timer();
    }
  }
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

int run_pair(size_t bytes, int passes, int blocks, const cudaDeviceProp& prop) {
  const char* pair = std::getenv("PAIR");
  unsigned sm_a = 0, sm_b = 0;
  if (!pair || std::sscanf(pair, "%u,%u", &sm_a, &sm_b) != 2 || sm_a == sm_b || bytes < 2 * kChunk ||
      passes < 1) {
    std::fprintf(stderr, "pair: PAIR=A,B (two SM ids), BYTES >= %zu, PASSES >= 1\n", 2 * kChunk);
    return 2;
  }
  if (blocks < 1) blocks = 8 * prop.multiProcessorCount;
  const size_t chunks = bytes / kChunk;
  int4* buffer = nullptr;
  unsigned* sink = nullptr;
  int* claimed = nullptr;
  CHECK(cudaMalloc(&buffer, chunks * kChunk));
  CHECK(cudaMalloc(&sink, 2 * kThreads * sizeof(unsigned)));
  CHECK(cudaMalloc(&claimed, 2 * sizeof(int)));
  CHECK(cudaMemset(buffer, 0x5a, chunks * kChunk));
  CHECK(cudaMemset(claimed, 0, 2 * sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  pair_kernel<<<blocks, kThreads>>>(buffer, chunks, passes, sm_a, sm_b, claimed, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int got[2] = {0, 0};
  CHECK(cudaMemcpy(got, claimed, sizeof(got), cudaMemcpyDeviceToHost));
  std::printf("RESULT mode=pair:%u:%u bytes=%zu passes=%d blocks=%d ran=%d%d\n", sm_a, sm_b, chunks * kChunk,
              passes, blocks, got[0], got[1]);
  return got[0] && got[1] ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(
        stderr,
        "usage: l2_probe "
        "single|shared|spread|private|wprivate|wsingle|rmw|rmwspread|rmwhalf|rmwlock|rmwfence|"
        "rmwplain|rmwcgfence|rfence|rfenceother|rfenceasync|rfenceweak|rfenceotherweak|rfenceotherasync|"
        "wthenread|rthenread|retouch|stale|wbetween|rbetween|scatter|pair|heads|copies BYTES PASSES "
        "[BLOCKS]\n");
    return 2;
  }
  const std::string mode_name = argv[1];
  const int mode = mode_name == "single"             ? 0
                   : mode_name == "shared"           ? 1
                   : mode_name == "spread"           ? 2
                   : mode_name == "private"          ? 3
                   : mode_name == "wprivate"         ? 4
                   : mode_name == "wsingle"          ? 5
                   : mode_name == "rmw"              ? 6
                   : mode_name == "rmwspread"        ? 7
                   : mode_name == "wthenread"        ? 8
                   : mode_name == "rthenread"        ? 9
                   : mode_name == "retouch"          ? 10
                   : mode_name == "stale"            ? 11
                   : mode_name == "wbetween"         ? 12
                   : mode_name == "rbetween"         ? 13
                   : mode_name == "rmwhalf"          ? 14
                   : mode_name == "rmwlock"          ? 15
                   : mode_name == "rmwfence"         ? 16
                   : mode_name == "rmwplain"         ? 17
                   : mode_name == "rmwcgfence"       ? 18
                   : mode_name == "rfence"           ? 19
                   : mode_name == "rfenceother"      ? 20
                   : mode_name == "rfenceasync"      ? 21
                   : mode_name == "rfenceweak"       ? 22
                   : mode_name == "rfenceotherweak"  ? 23
                   : mode_name == "rfenceotherasync" ? 24
                                                     : -1;
  const size_t bytes = std::strtoull(argv[2], nullptr, 10);
  const int passes = std::atoi(argv[3]);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (mode_name == "scatter") return bytes >= 128 * 128 && passes >= 1 ? run_scatter(bytes, passes, prop) : 2;
  if (mode_name == "copies") return run_copies(bytes, passes, prop);
  if (mode_name == "heads") return run_heads(bytes, passes, argc > 4 ? std::atoi(argv[4]) : 0, prop);
  if (mode_name == "pair") return run_pair(bytes, passes, argc > 4 ? std::atoi(argv[4]) : 0, prop);
  int blocks = argc > 4 ? std::atoi(argv[4]) : prop.multiProcessorCount;
  if (mode == 0 || mode == 5 || mode == 10 ||
      (((mode >= 11 && mode <= 13) || mode == 19 || mode == 21 || mode == 22) && argc <= 4))
    blocks = 1;
  if ((mode == 20 || mode == 23 || mode == 24) && argc <= 4) blocks = 8;
  const bool slices_per_block = mode == 3 || mode == 4 || mode == 6 || mode == 8 || mode == 9;
  const size_t least_chunks = static_cast<size_t>(blocks) * (mode == 8 || mode == 9 ? 4
                                                             : slices_per_block     ? 1
                                                                                    : 0);
  if (mode < 0 || bytes < kChunk || passes < 1 || blocks < 1 || bytes / kChunk < least_chunks) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const char* groups_text = std::getenv("GROUP_COUNT");
  const int groups = mode >= 14 && groups_text ? std::atoi(groups_text) : 1;
  if (groups < 1 || blocks % groups != 0 || bytes / kChunk < 2 * static_cast<size_t>(groups)) {
    std::fprintf(stderr, "GROUP_COUNT must divide BLOCKS and leave each group two 16 KiB chunks\n");
    return 2;
  }
  const size_t chunks = bytes / kChunk;
  const char* hot_text = std::getenv("HOT_BYTES");
  const char* hot_passes_text = std::getenv("HOT_PASSES");
  const bool hot_part = mode >= 11 && mode <= 13;  // stale, wbetween, rbetween
  const size_t hot_chunks = hot_part && hot_text ? std::strtoull(hot_text, nullptr, 10) / kChunk : 0;
  const int hot_passes = hot_passes_text ? std::atoi(hot_passes_text) : 1;
  const size_t buffer_chunks = mode == 10 ? (2 + static_cast<size_t>(passes)) * chunks
                               : hot_part ? hot_chunks + chunks
                                          : chunks;
  int4* buffer = nullptr;
  unsigned* sink = nullptr;
  unsigned long long* times = nullptr;
  const char* times_path = std::getenv("TIMES");
  const char* samples_text = std::getenv("SAMPLES");
  const int samples = samples_text ? std::max(1, std::atoi(samples_text)) : 1;
  const size_t per_block = static_cast<size_t>(passes) * samples + 2;
  const size_t time_words = static_cast<size_t>(blocks) * per_block;
  if (times_path) {
    CHECK(cudaMalloc(&times, time_words * sizeof(unsigned long long)));
    CHECK(cudaMemset(times, 0, time_words * sizeof(unsigned long long)));  // writers fill pass ends only
  }
  // OFFSET_BYTES: the buffer starts this far into its allocation (a multiple of 128 bytes), so that where
  // its pages begin relative to the data can be moved without moving the allocation.
  const char* offset_text = std::getenv("OFFSET_BYTES");
  const size_t offset = offset_text ? std::strtoull(offset_text, nullptr, 10) : 0;
  if (offset % 128 != 0) {
    std::fprintf(stderr, "OFFSET_BYTES must be a multiple of 128\n");
    return 2;
  }
  char* allocation = nullptr;
  CHECK(cudaMalloc(&allocation, offset + buffer_chunks * kChunk));
  buffer = reinterpret_cast<int4*>(allocation + offset);
  CHECK(cudaMalloc(&sink, static_cast<size_t>(blocks) * kThreads * sizeof(unsigned)));
  CHECK(cudaMemset(allocation, 0x5a, offset + buffer_chunks * kChunk));
  int* locks = nullptr;  // rmwlock: a word per chunk of the written halves, 128 bytes apart; rfenceother: 1
  if (mode == 15 || mode == 20 || mode == 23 || mode == 24) {
    const size_t lock_bytes = mode == 15 ? chunks / 2 * 128 : 128;
    CHECK(cudaMalloc(&locks, lock_bytes));
    CHECK(cudaMemset(locks, 0, lock_bytes));
  }
  const char* fence_every_text = std::getenv("FENCE_EVERY");
  const int fence_interval = fence_every_text ? std::max(1, std::atoi(fence_every_text)) : 1;
  CHECK(cudaMemcpyToSymbol(fence_every, &fence_interval, sizeof fence_interval));
  const char* stagger_text = std::getenv("STAGGER_NS");
  const unsigned long long stagger = stagger_text ? std::strtoull(stagger_text, nullptr, 10) : 0, zero = 0;
  CHECK(cudaMemcpyToSymbol(stagger_ns, &stagger, sizeof stagger));
  CHECK(cudaMemcpyToSymbol(stagger_epoch, &zero, sizeof zero));
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  CHECK(cudaEventRecord(t0));
  l2_probe_kernel<<<blocks, kThreads>>>(buffer, chunks, passes, mode, sink, times, samples, hot_chunks,
                                        hot_passes, groups, locks);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(t1));
  CHECK(cudaDeviceSynchronize());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, t0, t1));
  const std::string reported =  // stale, wbetween, rbetween: the hot part's bytes and passes in the name
      hot_part ? mode_name + ":" + std::to_string(hot_chunks * kChunk) + ":" + std::to_string(hot_passes)
               : mode_name;
  std::printf(
      "RESULT mode=%s bytes=%zu passes=%d blocks=%d ms=%.3f sms=%d l2=%d offset=%zu groups=%d "
      "fence_every=%d stagger_ns=%llu\n",
      reported.c_str(), chunks * kChunk, passes, blocks, ms, prop.multiProcessorCount, prop.l2CacheSize,
      offset, groups, fence_interval, stagger);
  if (times_path) {
    std::vector<unsigned long long> host(time_words);
    CHECK(cudaMemcpy(host.data(), times, time_words * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    FILE* f = std::fopen(times_path, "w");
    if (!f) return 1;
    std::fprintf(f, "block,sm,start_ns");
    for (int p = 0; p < passes; ++p)
      for (int k = 0; k < samples; ++k)
        if (samples == 1)
          std::fprintf(f, ",pass%d_end_ns", p);
        else
          std::fprintf(f, ",pass%d_%d_of_%d_ns", p, k + 1, samples);
    std::fprintf(f, "\n");
    unsigned long long t0 = host[1];  // the earliest block start
    for (int b = 0; b < blocks; ++b) t0 = std::min(t0, host[static_cast<size_t>(b) * per_block + 1]);
    for (int b = 0; b < blocks; ++b) {
      const unsigned long long* t = host.data() + static_cast<size_t>(b) * per_block;
      std::fprintf(f, "%d,%llu,%llu", b, t[0], t[1] - t0);
      for (size_t k = 2; k < per_block; ++k)
        if (t[k])
          std::fprintf(f, ",%llu", t[k] - t0);
        else
          std::fprintf(f, ",");
      std::fprintf(f, "\n");
    }
    std::fclose(f);
    CHECK(cudaFree(times));
  }
  CHECK(cudaFree(allocation));
  CHECK(cudaFree(sink));
  if (locks) CHECK(cudaFree(locks));
  return 0;
}
