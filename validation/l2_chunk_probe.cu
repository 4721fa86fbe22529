// L2 chunk probe: which physical 2 MiB pages' 128 KiB blocks share L2 sets. The grow probe
// (l2_line_probe.cu, layout grow) found that one SM's reads fill groups of sets of 8 blocks each, and that
// which blocks share a group depends on the buffer's physical pages. Here the pages are the probe's own:
// CHUNKS physical chunks of 2 MiB (cuMemCreate), mapped side by side into one virtual range in an order the
// probe chooses, so a block is named by (chunk, block within it) whatever the order. For each of ORDERS
// orders (a seeded shuffle; the first order is 0, 1, 2, ...), the first MAPPED chunks of it are mapped and
// the grow loop runs on them: a warp reads the first n 128 KiB blocks twice for every n from FIRST to
// MAPPED x 16, and the blocks that turn slow when block n joins share its sets.
//   l2_chunk_probe CHUNKS MAPPED ORDERS FIRST FILE
//   l2_chunk_probe CHUNKS MAPPED pieces TESTS FILE
//   l2_chunk_probe CHUNKS MAPPED sets TARGETS FILE   (which lines share a set: run_sets below)
// The second form maps the first MAPPED chunks in index order and runs the tests of the file TESTS, one a
// line: a name, then pieces "chunk:block:half" (half: 0 for the lines of the 128 KiB block whose address
// bits 11 and 14 are equal, 1 unequal; "chunk:block:b" both). A warp reads the pieces' lines in the order
// given, twice, after a flush; FILE gets per test "name," and a digit per piece, the tenths of its lines
// whose second-pass load took 448 cycles or more. If the pieces of one group of sets are more than its ways
// hold, they all miss; if not, none. LINES_OUT=1: every line's second-pass latency (cycles / 8, a byte, in
// the order read) also goes to FILE.NAME.u8.
// FILE gets, per order, a line "order,c0,c1,..." (the chunks mapped, in virtual order), then the grow loop's
// lines ("n," and a digit per GRAIN_KIB of the environment, default 128: the tenths of its lines slow in
// the second pass). Chunks are allocated in index order, before anything else of the probe's.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "l2_line_kernels.cuh"
#include "l2_set_kernels.cuh"

#define CU_CHECK(call)                                                           \
  do {                                                                           \
    const CUresult result_ = (call);                                             \
    if (result_ != CUDA_SUCCESS) {                                               \
      const char* what_ = nullptr;                                               \
      cuGetErrorString(result_, &what_);                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, what_); \
      std::exit(2);                                                              \
    }                                                                            \
  } while (0)

constexpr size_t kChunk = size_t{2} << 20;

// Reads the lines at `offsets` (bytes from `base`) in order, `passes` times, timing each as line_kernel.
// Its timed load is line_kernel's, written out again: a shared device function moved lines near the
// 448-cycle threshold (a digit in ten by one; tried, not kept), and the data were taken with this code.
__global__ void list_kernel(const char* __restrict__ base, const unsigned* __restrict__ offsets, size_t lines,
                            int passes, unsigned char* __restrict__ out) {
  __shared__ volatile unsigned sink;
  unsigned dep = 0;
  for (int p = 0; p < passes; ++p)
    for (size_t i = 0; i < lines; ++i) {
      const unsigned* at = reinterpret_cast<const unsigned*>(base + offsets[i]) + threadIdx.x + dep;
      const long long start = clock64();
      const unsigned value = load_cg(at);
      sink = value;
      __syncwarp();
      const long long end = clock64();
      dep = value;
      const long long eighths = (end - start) / 8;
      if (threadIdx.x == 0)
        out[static_cast<size_t>(p) * lines + i] = static_cast<unsigned char>(eighths > 255 ? 255 : eighths);
    }
}

// The byte offsets of one piece's lines ("chunk:block:half" or "chunk:block:b"); false if malformed.
bool piece_lines(const std::string& piece, size_t mapped, std::vector<unsigned>& offsets) {
  size_t chunk = 0, block = 0;
  char half = 0;
  if (std::sscanf(piece.c_str(), "%zu:%zu:%c", &chunk, &block, &half) != 3 || chunk >= mapped ||
      block >= 16 || (half != '0' && half != '1' && half != 'b'))
    return false;
  for (size_t i = 0; i < kBlockLines; ++i) {
    const int parity = static_cast<int>((i >> 4 ^ i >> 7) & 1);  // address bits 11 and 14
    if (half != 'b' && parity != half - '0') continue;
    offsets.push_back(static_cast<unsigned>(chunk * kChunk + block * kBlockLines * kLine + i * kLine));
  }
  return true;
}

int run_pieces(const char* base, size_t mapped, const char* tests_path, const int4* junk, size_t junk_count,
               int* flag, FILE* f, const char* file_path) {
  std::ifstream tests(tests_path);
  if (!tests) return std::fprintf(stderr, "cannot read %s\n", tests_path), 2;
  std::string line;
  while (std::getline(tests, line)) {
    std::istringstream words(line);
    std::string name, piece;
    if (!(words >> name) || name[0] == '#') continue;  // blank lines and comments
    std::vector<unsigned> offsets;
    std::vector<size_t> ends;
    while (words >> piece) {
      if (!piece_lines(piece, mapped, offsets))
        return std::fprintf(stderr, "bad piece %s\n", piece.c_str()), 2;
      ends.push_back(offsets.size());
    }
    unsigned* device_offsets = nullptr;
    unsigned char* out = nullptr;
    CHECK(cudaMalloc(&device_offsets, offsets.size() * sizeof(unsigned)));
    CHECK(cudaMalloc(&out, offsets.size() * 2));
    CHECK(cudaMemcpy(device_offsets, offsets.data(), offsets.size() * sizeof(unsigned),
                     cudaMemcpyHostToDevice));
    flush_kernel<<<264, 1024>>>(junk, junk_count, flag);
    list_kernel<<<1, 32>>>(base, device_offsets, offsets.size(), 2, out);
    CHECK(cudaGetLastError());
    std::vector<unsigned char> host(offsets.size() * 2);
    CHECK(cudaMemcpy(host.data(), out, host.size(), cudaMemcpyDeviceToHost));
    if (std::getenv("LINES_OUT")) {  // every line's second-pass latency (cycles / 8) to FILE.NAME.u8
      const std::string path = std::string(file_path) + "." + name + ".u8";
      FILE* lines = std::fopen(path.c_str(), "wb");
      if (!lines || std::fwrite(host.data() + offsets.size(), 1, offsets.size(), lines) != offsets.size())
        return 1;
      std::fclose(lines);
    }
    std::fprintf(f, "%s,", name.c_str());
    size_t begin = 0;
    for (size_t end : ends) {
      size_t slow = 0;
      for (size_t i = begin; i < end; ++i) slow += host[offsets.size() + i] * 8 >= 448;
      std::fputc('0' + static_cast<int>(std::min<size_t>(9, slow * 10 / (end - begin))), f);
      begin = end;
    }
    std::fputc('\n', f);
    CHECK(cudaFree(device_offsets));
    CHECK(cudaFree(out));
  }
  return 0;
}

// `sets` mode: the near 4 KiB blocks (a cold load of two of their lines fast), then the eviction sets and
// members of the targets' sets (l2_set_kernels.cuh). TARGETS: a file of "chunk:line" a line (line 0-16383
// of the chunk), or "sweepN" (set_kernel picks targets until N sets are found). FILE gets a line per set:
// "chunk:line of the target,status,member count," then the members as chunk:line (status: set_kernel);
// FILE.cold.u8 the cold latencies (cycles / 8) of lines 0 and 17 of every 4 KiB block.
int run_sets(const char* base, size_t mapped, const char* targets_path, const int4* junk, size_t junk_count,
             int* flag, FILE* f, const char* file_path) {
  const size_t blocks = mapped * kChunk / 4096;
  std::vector<unsigned> probe_offsets;
  for (size_t b = 0; b < blocks; ++b)
    for (unsigned line : {0u, 17u}) probe_offsets.push_back(static_cast<unsigned>(b * 4096 + line * kLine));
  unsigned* device_offsets = nullptr;
  unsigned char* cold = nullptr;
  CHECK(cudaMalloc(&device_offsets, probe_offsets.size() * sizeof(unsigned)));
  CHECK(cudaMalloc(&cold, probe_offsets.size()));
  CHECK(cudaMemcpy(device_offsets, probe_offsets.data(), probe_offsets.size() * sizeof(unsigned),
                   cudaMemcpyHostToDevice));
  flush_kernel<<<264, 1024>>>(junk, junk_count, flag);
  list_kernel<<<1, 32>>>(base, device_offsets, probe_offsets.size(), 1, cold);
  CHECK(cudaGetLastError());
  std::vector<unsigned char> latency(probe_offsets.size());
  CHECK(cudaMemcpy(latency.data(), cold, latency.size(), cudaMemcpyDeviceToHost));
  const std::string cold_path = std::string(file_path) + ".cold.u8";
  FILE* cold_file = std::fopen(cold_path.c_str(), "wb");
  if (!cold_file || std::fwrite(latency.data(), 1, latency.size(), cold_file) != latency.size()) return 1;
  std::fclose(cold_file);
  std::vector<unsigned short> near;
  std::vector<int> near_index(blocks, -1);
  for (size_t b = 0; b < blocks; ++b)
    if (latency[2 * b] * 8 < 640 && latency[2 * b + 1] * 8 < 640) {
      near_index[b] = static_cast<int>(near.size());
      near.push_back(static_cast<unsigned short>(b));
    }
  std::printf("RESULT sets: %zu of %zu 4 KiB blocks near\n", near.size(), blocks);
  // TARGETS "sweep N": the kernel picks its own targets until N sets are found (set_kernel).
  std::vector<unsigned> targets;
  int target_count = 0;
  if (std::sscanf(targets_path, "sweep%d", &target_count) == 1) {
    target_count = -target_count;
  } else {
    std::ifstream targets_file(targets_path);
    if (!targets_file) return std::fprintf(stderr, "cannot read %s\n", targets_path), 2;
    std::string word;
    while (targets_file >> word) {
      size_t chunk = 0, line = 0;
      if (std::sscanf(word.c_str(), "%zu:%zu", &chunk, &line) != 2 || chunk >= mapped ||
          line >= kChunk / kLine)
        return std::fprintf(stderr, "bad target %s\n", word.c_str()), 2;
      const size_t offset = chunk * kChunk + line * kLine;
      const int index = near_index[offset / 4096];
      if (index < 0) {
        std::printf("target %s: far, skipped\n", word.c_str());
        continue;
      }
      targets.push_back(static_cast<unsigned>(index) * 32 + static_cast<unsigned>(offset % 4096 / kLine));
    }
    target_count = static_cast<int>(targets.size());
  }
  const size_t sets = static_cast<size_t>(std::abs(target_count));
  unsigned short* device_near = nullptr;
  unsigned *device_targets = nullptr, *out = nullptr, *histogram = nullptr;
  const size_t per_set = kMaxMembers + 3;
  CHECK(cudaMalloc(&device_near, near.size() * sizeof(unsigned short)));
  CHECK(cudaMalloc(&device_targets, targets.size() * sizeof(unsigned) + 4));
  CHECK(cudaMalloc(&out, sets * per_set * sizeof(unsigned) + 4));
  CHECK(cudaMemset(out, 0xff, sets * per_set * sizeof(unsigned) + 4));
  CHECK(cudaMalloc(&histogram, 64 * sizeof(unsigned)));
  CHECK(cudaMemcpy(device_near, near.data(), near.size() * sizeof(unsigned short), cudaMemcpyHostToDevice));
  CHECK(
      cudaMemcpy(device_targets, targets.data(), targets.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  const size_t shared =
      (near.size() * sizeof(unsigned short) + 15) / 16 * 16 + (near.size() * 32 + 31) / 32 * 4 + 2048 * 4;
  // FAR_CHUNKS=n: instead of the pool, test the other partition's lines of the first n chunks (copies).
  const char* far_text = std::getenv("FAR_CHUNKS");
  const unsigned far_lines = far_text ? static_cast<unsigned>(std::atoi(far_text)) * (kChunk / kLine) : 0u;
  CHECK(cudaFuncSetAttribute(set_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared)));
  // TEST_BLOCK (default 64): pool lines a first test adds together; 1: each line alone.
  const char* block_text = std::getenv("TEST_BLOCK");
  const unsigned test_block = block_text ? static_cast<unsigned>(std::atoi(block_text)) : 64u;
  // BUDGET_S: seconds after which the kernel starts no new target (0 or unset: none).
  const char* budget_text = std::getenv("BUDGET_S");
  const unsigned long long budget_ns =
      budget_text ? static_cast<unsigned long long>(std::atof(budget_text) * 1e9) : 0ull;
  flush_kernel<<<264, 1024>>>(junk, junk_count, flag);
  set_kernel<<<1, 32, shared>>>(base, device_near, static_cast<unsigned>(near.size()), device_targets,
                                target_count, out, histogram, test_block, std::getenv("REVERSE") != nullptr,
                                far_lines, budget_ns);
  CHECK(cudaGetLastError());
  std::vector<unsigned> host(sets * per_set), bins(64);
  CHECK(cudaMemcpy(host.data(), out, host.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(bins.data(), histogram, bins.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  auto name = [&](unsigned p) {
    if (p & kFarFlag) {
      const size_t line = p & ~kFarFlag;
      return "f" + std::to_string(line / (kChunk / kLine)) + ":" + std::to_string(line % (kChunk / kLine));
    }
    const size_t offset = static_cast<size_t>(near[p >> 5]) * 4096 + (p & 31) * kLine;
    return std::to_string(offset / kChunk) + ":" + std::to_string(offset % kChunk / kLine);
  };
  for (size_t t = 0; t < sets; ++t) {
    const unsigned* o = host.data() + t * per_set;
    if (o[0] == 0xffffffffu) break;  // a sweep that ran out of targets
    std::fprintf(f, "%s,%u,%u,", name(o[0]).c_str(), o[1], o[2]);
    for (unsigned i = 0; i < std::min<unsigned>(o[2], kMaxMembers); ++i)
      std::fprintf(f, "%s%s", i ? " " : "", name(o[3 + i]).c_str());
    std::fprintf(f, "\n");
  }
  std::printf("RESULT sets: reload latency histogram (32-cycle bins):");
  for (unsigned b : bins) std::printf(" %u", b);
  std::printf("\n");
  for (void* p :
       {static_cast<void*>(device_offsets), static_cast<void*>(cold), static_cast<void*>(device_near),
        static_cast<void*>(device_targets), static_cast<void*>(out), static_cast<void*>(histogram)})
    CHECK(cudaFree(p));
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: l2_chunk_probe CHUNKS MAPPED ORDERS FIRST FILE\n");
    return 2;
  }
  const size_t chunks = std::strtoull(argv[1], nullptr, 10), mapped = std::strtoull(argv[2], nullptr, 10);
  const bool sets = std::string(argv[3]) == "sets";
  const bool pieces = std::string(argv[3]) == "pieces" || sets;
  const int orders = pieces ? 1 : std::atoi(argv[3]);
  const size_t first = pieces ? 1 : std::strtoull(argv[4], nullptr, 10);
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
    const int status = sets ? run_sets(reinterpret_cast<const char*>(base), mapped, argv[4], junk, junk_count,
                                       flag, f, argv[5])
                       : pieces ? run_pieces(reinterpret_cast<const char*>(base), mapped, argv[4], junk,
                                             junk_count, flag, f, argv[5])
                                : grow(reinterpret_cast<const char*>(base), lines, 2, 32, first, junk,
                                       junk_count, flag, out, f);
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
