// L2 chunk probe: which physical 2 MiB pages' 128 KiB blocks share L2 sets. The grow probe
// (l2_line_probe.cu, layout grow) found that one SM's reads fill groups of sets of 8 blocks each, and that
// which blocks share a group depends on the buffer's physical pages. Here the pages are the probe's own:
// CHUNKS physical chunks of 2 MiB (cuMemCreate), mapped side by side into one virtual range in an order the
// probe chooses, so a block is named by (chunk, block within it) whatever the order. For each of ORDERS
// orders (a seeded shuffle; the first order is 0, 1, 2, ...), the first MAPPED chunks of it are mapped and
// the grow loop runs on them: a warp reads the first n 128 KiB blocks twice for every n from FIRST to
// MAPPED x 16, and the blocks that turn slow when block n joins share its sets.
//   l2_chunk_probe CHUNKS MAPPED ORDERS FIRST FILE
// FILE gets, per order, a line "order,c0,c1,..." (the chunks mapped, in virtual order), then the grow loop's
// lines ("n," and a digit per GRAIN_KIB of the environment, default 128: the tenths of its lines slow in
// the second pass). Chunks are allocated in index order, before anything else of the probe's.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "cuda_check.h"
#include "l2_line_kernels.cuh"

#define CU_CHECK(call)                                                                \
  do {                                                                                \
    const CUresult result_ = (call);                                                  \
    if (result_ != CUDA_SUCCESS) {                                                    \
      const char* what_ = nullptr;                                                    \
      cuGetErrorString(result_, &what_);                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, what_);      \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

constexpr size_t kChunk = size_t{2} << 20;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: l2_chunk_probe CHUNKS MAPPED ORDERS FIRST FILE\n");
    return 2;
  }
  const size_t chunks = std::strtoull(argv[1], nullptr, 10), mapped = std::strtoull(argv[2], nullptr, 10);
  const int orders = std::atoi(argv[3]);
  const size_t first = std::strtoull(argv[4], nullptr, 10);
  if (mapped < 1 || mapped > chunks || orders < 1 || first < 1 || first > mapped * 16)
    return std::fprintf(stderr, "1 <= MAPPED <= CHUNKS, ORDERS >= 1, 1 <= FIRST <= MAPPED x 16\n"), 2;
  CHECK(cudaFree(nullptr));  // the primary context, which the driver calls below use
  int device = 0;
  CHECK(cudaGetDevice(&device));
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  CU_CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  if (kChunk % granularity != 0) return std::fprintf(stderr, "granularity %zu\n", granularity), 2;
  std::vector<CUmemGenericAllocationHandle> handles(chunks);
  for (auto& h : handles) CU_CHECK(cuMemCreate(&h, kChunk, &prop, 0));
  CUdeviceptr base = 0;
  CU_CHECK(cuMemAddressReserve(&base, mapped * kChunk, kChunk, 0, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  const size_t junk_count = (size_t{256} << 20) / sizeof(int4);
  int4* junk = nullptr;
  int* flag = nullptr;
  unsigned char* out = nullptr;
  const size_t lines = mapped * kChunk / kLine;
  CHECK(cudaMalloc(&junk, junk_count * sizeof(int4)));
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMalloc(&out, lines * 2));
  CHECK(cudaMemset(junk, 1, junk_count * sizeof(int4)));
  FILE* f = std::fopen(argv[5], "w");
  if (!f) return 1;
  std::vector<size_t> order(chunks);
  std::iota(order.begin(), order.end(), 0);
  const char* seed_text = std::getenv("SEED");
  std::mt19937 random(seed_text ? static_cast<unsigned>(std::atoi(seed_text)) : 1u);
  for (int r = 0; r < orders; ++r) {
    if (r > 0) std::shuffle(order.begin(), order.end(), random);
    std::fprintf(f, "order");
    for (size_t i = 0; i < mapped; ++i) {
      CU_CHECK(cuMemMap(base + i * kChunk, kChunk, 0, handles[order[i]], 0));
      std::fprintf(f, ",%zu", order[i]);
    }
    std::fprintf(f, "\n");
    CU_CHECK(cuMemSetAccess(base, mapped * kChunk, &access, 1));
    CHECK(cudaMemset(reinterpret_cast<void*>(base), 0, mapped * kChunk));
    CHECK(cudaDeviceSynchronize());
    const int status = grow(reinterpret_cast<const char*>(base), lines, 2, 32, first, junk, junk_count, flag,
                            out, f);
    if (status != 0) return status;
    std::fflush(f);
    CU_CHECK(cuMemUnmap(base, mapped * kChunk));
  }
  std::fclose(f);
  CU_CHECK(cuMemAddressFree(base, mapped * kChunk));
  for (auto& h : handles) CU_CHECK(cuMemRelease(h));
  CHECK(cudaFree(junk));
  CHECK(cudaFree(flag));
  CHECK(cudaFree(out));
  return 0;
}
