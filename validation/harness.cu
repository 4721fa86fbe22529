// Harness for the attnsim cross-validation kernels (kernels.cu): one configuration per process.
//
//   harness --schedule naive-safe|naive-online|two-pass|flash1|flash2 --n N --d D --heads H --block B
//   [--causal] [--reps R]
//           [--warmup W] [--seed S] [--no-flush]
//   harness --list          the default sweep, one configuration (its arguments) per line
//   --flash1-groups G       flash1: G blocks per (launch, head), each loading K_j and V_j once for a run
//                           of query blocks; 0 (default) = one block per visible query block
//   --dry-run               print the expected bytes (exp_* below) without touching a GPU
//   --kernel ffma|tc        ffma (default): the FFMA kernels of kernels.cu (naive-safe, flash1, flash2); tc:
//   the
//                           mma.sync tensor-core kernels, same tiles and traffic: sched_flash2_tc
//                           (kernels_tc.cu) and naive-safe, naive-online, two-pass, flash1
//                           (kernels_tc_fwd.cu). naive-online and two-pass exist only as tc. The tc RESULT
//                           line adds registers, smem_bytes, threads, blocks_per_sm... per distinct kernel in
//                           launch order, '/'-separated (naive: qk/softmax/ pv; two-pass: stats/output;
//                           flash1 and flash2: one kernel)
//   --block-q BR --block-k BC   B_r and B_c separately (tc: 64x64, 128x64, 128x128); --block B sets both
//   --tc-padded             tc: shared-memory rows padded by 16 bytes instead of swizzled (reads 1.5x the
//                           schedule's bytes; only to show that)
//   --tc-min-blocks 1|2     tc flash2: the blocks per SM the kernel is compiled for (__launch_bounds__);
//                           2 (128 x 64, d = 128 only) keeps Q_i in shared memory instead of registers
//                           so that two blocks fit, as FlashAttention-2's forward runs
//   --keys-descending       tc flash2: each query block walks its key blocks from the diagonal (or the last)
//                           down to 0, as FlashAttention-2's forward does; the same tiles are loaded
//
// For the configuration it: draws Q, K, V (fp16, uniform in [-1, 1) from the seed, Q then scaled by
// 1/sqrt(d)); poisons O (NaN) and runs the schedule once; checks every O element was written and compares
// 64 sampled rows per head with a float64 CPU reference (max |O - ref| / max |ref|, as attnsim's .check);
// then, if R > 0, times W warm-up and R timed runs with CUDA events (each timed run starts with O poisoned
// and L2 flushed, like ncu --cache-control all; flash1's initialiser runs before the start event) and checks
// that the last run reproduced the first bit for bit. `--reps 0` runs each counted kernel exactly once:
// that is the mode run_on_device.sh uses under ncu.
//
// It prints one line on stdout, "RESULT key=value ...", with the measured numbers and the bytes the
// schedule should move between the SMs and L2 (exp_sched_*: docs/schedules.md's per-tensor ledger;
// exp_kernel_*: what these kernels move, which differs from the ledger for flash1's K and V, see
// README.md). Diagnostics go to stderr. Exit status 0 even if the error check fails (ok=0 says so); 2 on a
// CUDA or usage error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "kernels.h"

namespace {

using attnval::Dims;

struct Options {
  std::string schedule;
  Dims dims;
  int reps = 10, warmup = 3;
  uint64_t seed = 20240607;
  bool flush = true;
  bool dry_run = false;
  std::string kernel = "ffma";  // flash2: ffma (sched_flash2_fwd) or tc (sched_flash2_tc)
  bool tc_padded = false;
  int tc_min_blocks = 1;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(
      stderr,
      "error: %s\nusage: harness --schedule naive-safe|naive-online|two-pass|flash1|flash2 --n N --d D "
      "--heads H --block B "
      "[--causal] [--reps R] [--warmup W] [--seed S] [--no-flush] [--flash1-groups G] [--dry-run]\n       "
      "[--kernel ffma|tc] [--block-q BR --block-k BC] [--tc-padded] [--tc-min-blocks 1|2] "
      "[--keys-descending]\n       "
      "harness --list\n",
      msg);
  std::exit(2);
}

// The default sweep. Runtime on an H100 (estimate, FMA kernels at ~10 TFLOP/s f32): flash2 n=16384 is
// ~0.55 TFLOP of FMAs, ~60 ms a run; naive-safe n=4096 ~35 GFLOP, ~5 ms a run. See run_on_device.sh.
void print_sweep() {
  const char* schedules[] = {"naive-safe", "flash1", "flash2"};
  for (const char* s : schedules)
    for (int n : {1024, 4096})
      for (int causal : {0, 1})
        std::printf("--schedule %s --n %d --d 64 --heads 8 --block 64%s\n", s, n, causal ? " --causal" : "");
  std::printf("--schedule flash2 --n 16384 --d 64 --heads 8 --block 64\n");
}

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> const char* {
    if (i + 1 >= argc) usage((std::string(argv[i]) + " needs a value").c_str());
    return argv[++i];
  };
  auto integer = [&](int& i) {
    const char* flag = argv[i];
    const char* v = value(i);
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (*end || x < 0 || x > (1L << 30)) usage((std::string(flag) + ": not a count: " + v).c_str());
    return static_cast<int>(x);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list") {
      print_sweep();
      std::exit(0);
    } else if (a == "--schedule") {
      o.schedule = value(i);
    } else if (a == "--n") {
      o.dims.n = integer(i);
    } else if (a == "--d") {
      o.dims.d = integer(i);
    } else if (a == "--heads") {
      o.dims.heads = integer(i);
    } else if (a == "--block") {
      o.dims.br = o.dims.bc = integer(i);
    } else if (a == "--block-q") {
      o.dims.br = integer(i);
    } else if (a == "--block-k") {
      o.dims.bc = integer(i);
    } else if (a == "--kernel") {
      o.kernel = value(i);
    } else if (a == "--tc-padded") {
      o.tc_padded = true;
    } else if (a == "--tc-min-blocks") {
      o.tc_min_blocks = integer(i);
    } else if (a == "--causal") {
      o.dims.causal = true;
    } else if (a == "--keys-descending") {
      o.dims.keys_descending = true;
    } else if (a == "--reps") {
      o.reps = integer(i);
    } else if (a == "--warmup") {
      o.warmup = integer(i);
    } else if (a == "--seed") {
      o.seed = std::strtoull(value(i), nullptr, 10);
    } else if (a == "--no-flush") {
      o.flush = false;
    } else if (a == "--flash1-groups") {
      o.dims.flash1_groups = integer(i);
    } else if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "-h" || a == "--help") {
      usage("help");
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (o.schedule != "naive-safe" && o.schedule != "naive-online" && o.schedule != "two-pass" &&
      o.schedule != "flash1" && o.schedule != "flash2")
    usage("--schedule must be naive-safe, naive-online, two-pass, flash1 or flash2");
  const Dims& d = o.dims;
  if (o.tc_padded && o.kernel != "tc") usage("--tc-padded: --kernel tc only");
  if (o.tc_min_blocks != 1 && (o.tc_min_blocks != 2 || o.kernel != "tc" || o.schedule != "flash2" ||
                               o.tc_padded || d.br != 128 || d.bc != 64 || d.d != 128))
    usage(
        "--tc-min-blocks 2: --kernel tc --schedule flash2 --block-q 128 --block-k 64 --d 128 only, not with "
        "--tc-padded");
  if (d.keys_descending && (o.kernel != "tc" || o.schedule != "flash2"))
    usage("--keys-descending: --kernel tc --schedule flash2 only");
  if (o.kernel == "tc") {
    if (o.tc_padded && o.schedule != "flash2") usage("--tc-padded: flash2 only");
    const bool ok = o.schedule == "flash2" ? attnval::tc_supported(d.d, d.br, d.bc)
                                           : attnval::tc_fwd_supported(o.schedule.c_str(), d.d, d.br, d.bc);
    if (!ok) usage("--kernel tc supports --d 64|128 with B_r x B_c = 64x64, 128x64, 128x128");
  } else if (o.kernel == "ffma") {
    if (o.schedule == "naive-online" || o.schedule == "two-pass")
      usage("naive-online and two-pass: --kernel tc only (no FFMA kernel)");
    if (d.br != d.bc || !attnval::supported(d.d, d.br)) usage("supported: --d 64|128, --block 32|64");
  } else {
    usage("--kernel must be ffma or tc");
  }
  if (d.n <= 0 || d.n % d.br != 0 || d.n % d.bc != 0)
    usage("--n must be a positive multiple of the blocks (no ragged tiles)");
  if (d.heads <= 0) usage("--heads must be positive");
  return o;
}

// Bytes between the SMs and L2 (= the simulator's HBM ledger where the kernels mirror it exactly).
struct Bytes {
  double read = 0, write = 0;
};

// docs/schedules.md, per head, times heads. e = 2 (fp16), f32 scores/statistics.
Bytes schedule_ledger(const std::string& s, const Dims& g) {
  const double n = g.n, d = g.d, e = 2, f = 4, br = g.br, bc = g.bc;
  const int64_t tr = g.n / g.br, tc = g.n / g.bc;
  // R_K: key rows a query-outer sweep reads; R_Q: query rows flash1 visits.
  double rk = 0, rq = 0;
  for (int64_t i = 0; i < tr; ++i) {
    const double last = i * br + br - 1;
    rk += g.causal ? std::min(n, bc * std::ceil((last + 1) / bc)) : n;
  }
  for (int64_t j = 0; j < tc; ++j) rq += g.causal ? n - br * std::floor(j * bc / br) : n;
  Bytes b;
  if (s == "naive-safe" || s == "naive-online") {  // S read by 3 softmax passes (safe) or 2 (online)
    b.read = n * d * e + 2 * tr * n * d * e + (s == "naive-safe" ? 3 : 2) * n * n * f + n * n * e;
    b.write = n * n * f + n * n * e + n * d * e;
  } else if (s == "two-pass") {  // Q twice, K 2 R_K, V R_K; m, l read and written once each
    b.read = 2 * n * d * e + 3 * rk * d * e + 2 * n * f;
    b.write = n * d * e + 2 * n * f;
  } else if (s == "flash1") {
    b.read = 2 * n * d * e + 2 * rq * d * e + 2 * rq * f;  // K, V once; Q, O; l, m
    b.write = rq * d * e + 2 * rq * f;
  } else {
    b.read = n * d * e + 2 * rk * d * e;
    b.write = n * d * e;
  }
  b.read *= g.heads;
  b.write *= g.heads;
  return b;
}

// What these kernels move: the ledger, except flash1, whose blocks of one launch (one key block j) each
// load K_j and V_j: K and V are read once per block (by default one per visible (i, j) tile) instead of once
// per j.
Bytes kernel_ledger(const std::string& s, const Dims& g) {
  Bytes b = schedule_ledger(s, g);
  if (s == "flash1") {
    double blocks = 0;
    for (int j = 0; j < g.n / g.bc; ++j) blocks += attnval::flash1_grid(g, j).blocks;
    b.read += g.heads * 2.0 * (blocks * g.bc - g.n) * g.d * 2;
  }
  return b;
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1) times scale, rounded to fp16; `ref` keeps the rounded values as doubles.
void fill(std::vector<__half>& h, std::vector<double>& ref, uint64_t seed, double scale) {
  uint64_t state = seed;
  ref.resize(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    const double u = static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    h[i] = __float2half(static_cast<float>(u * scale));
    ref[i] = static_cast<double>(__half2float(h[i]));
  }
}

std::vector<int> sample_rows(int n) {
  std::vector<int> rows;
  const int count = std::min(n, 64);
  for (int t = 0; t < count; ++t)
    rows.push_back(count == 1 ? 0 : static_cast<int>((int64_t(t) * (n - 1)) / (count - 1)));
  return rows;
}

struct Check {
  double max_rel = 0, max_abs = 0;
  int64_t nonfinite = 0;
};

Check check_output(const Options& o, const std::vector<__half>& out, const std::vector<double>& q,
                   const std::vector<double>& k, const std::vector<double>& v) {
  const Dims& g = o.dims;
  const int n = g.n, d = g.d;
  Check c;
  for (const __half& x : out)
    if (!std::isfinite(__half2float(x))) ++c.nonfinite;
  double scale = 0;
  std::vector<double> s(n), acc(d);
  for (int h = 0; h < g.heads; ++h) {
    const size_t off = static_cast<size_t>(h) * n * d;
    for (int r : sample_rows(n)) {
      const int keys = g.causal ? r + 1 : n;
      double m = -INFINITY;
      for (int kk = 0; kk < keys; ++kk) {
        double dot = 0;
        for (int x = 0; x < d; ++x) dot += q[off + size_t(r) * d + x] * k[off + size_t(kk) * d + x];
        s[kk] = dot;
        m = std::max(m, dot);
      }
      double l = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int kk = 0; kk < keys; ++kk) {
        const double p = std::exp(s[kk] - m);
        l += p;
        for (int x = 0; x < d; ++x) acc[x] += p * v[off + size_t(kk) * d + x];
      }
      for (int x = 0; x < d; ++x) {
        const double ref = acc[x] / l;
        const double got = __half2float(out[off + size_t(r) * d + x]);
        double err = std::fabs(got - ref);
        if (std::isnan(err)) err = INFINITY;
        scale = std::max(scale, std::fabs(ref));
        c.max_abs = std::max(c.max_abs, err);
      }
    }
  }
  c.max_rel = scale > 0 ? c.max_abs / scale : c.max_abs;
  return c;
}

}  // namespace

// With TIMES=file in the environment (flash2): one more run recording each block's SM, start and end, written
// as block,sm,start_ns,end_ns (ns from the earliest start): block placement and drift on the GPU. The
// tensor-core kernel adds the times at a quarter, half and three quarters of its key blocks
// (block,sm,start_ns,q1_ns,q2_ns,q3_ns,end_ns): how co-resident blocks share the SM over time. The FFMA
// kernel with TIMES_EVERY=k adds the start of key blocks 0, k, 2k, ... (k0_ns,k{k}_ns,...; empty where a
// causal block has fewer): where each reader of K and V is, all along.
template <typename Run>
void write_block_times(const Options& o, const Dims& g, Run&& run, cudaStream_t st) {
  const char* path = std::getenv("TIMES");
  if (!path || o.schedule != "flash2") return;
  const bool tc = o.kernel == "tc";
  const char* every_env = std::getenv("TIMES_EVERY");
  const int every = tc || !every_env ? 0 : std::max(0, std::atoi(every_env));
  const int key_blocks = g.n / g.bc;
  const int samples = every ? (key_blocks + every - 1) / every : 0;
  const size_t fields = tc ? attnval::kTcTimeFields : 3 + static_cast<size_t>(samples);
  const size_t blocks = static_cast<size_t>(g.n / g.br) * g.heads;
  unsigned long long* times = nullptr;
  CHECK(cudaMalloc(&times, fields * blocks * sizeof(unsigned long long)));
  CHECK(cudaMemset(times, 0, fields * blocks * sizeof(unsigned long long)));
  if (tc)
    attnval::set_tc_block_times(times);
  else
    attnval::set_block_times(times, static_cast<int>(fields), every);
  run();
  CHECK(cudaStreamSynchronize(st));
  if (tc)
    attnval::set_tc_block_times(nullptr);
  else
    attnval::set_block_times(nullptr, 3, 0);
  std::vector<unsigned long long> host(fields * blocks);
  CHECK(cudaMemcpy(host.data(), times, host.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(times));
  unsigned long long t0 = host[1];
  for (size_t b = 0; b < blocks; ++b) t0 = std::min(t0, host[fields * b + 1]);
  FILE* f = std::fopen(path, "w");
  if (!f) return;
  std::fputs(tc ? "block,sm,start_ns,q1_ns,q2_ns,q3_ns,end_ns" : "block,sm,start_ns,end_ns", f);
  for (int k = 0; k < samples; ++k) std::fprintf(f, ",k%d_ns", k * every);
  std::fputs("\n", f);
  for (size_t b = 0; b < blocks; ++b) {
    std::fprintf(f, "%zu,%llu", b, host[fields * b]);
    for (size_t k = 1; k < fields; ++k) {
      const unsigned long long t = host[fields * b + k];
      if (t)
        std::fprintf(f, ",%llu", t - t0);
      else
        std::fputs(",", f);  // a quarter a short block does not reach
    }
    std::fprintf(f, "\n");
  }
  std::fclose(f);
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const Dims& g = o.dims;
  attnval::set_tc_padded(o.tc_padded);
  attnval::set_tc_min_blocks(o.tc_min_blocks);
  if (o.dry_run) {
    const Bytes sched = schedule_ledger(o.schedule, g), kern = kernel_ledger(o.schedule, g);
    std::printf(
        "EXPECTED schedule=%s n=%d d=%d heads=%d block_q=%d block_k=%d causal=%d dtype=f16 "
        "exp_sched_read_bytes=%.0f exp_sched_write_bytes=%.0f exp_kernel_read_bytes=%.0f "
        "exp_kernel_write_bytes=%.0f flash1_groups=%d\n",
        o.schedule.c_str(), g.n, g.d, g.heads, g.br, g.bc, g.causal ? 1 : 0, sched.read, sched.write,
        kern.read, kern.write, g.flash1_groups);
    return 0;
  }
  const size_t qkv = static_cast<size_t>(g.heads) * g.n * g.d;
  const size_t rows = static_cast<size_t>(g.heads) * g.n;
  const size_t nn = static_cast<size_t>(g.heads) * g.n * g.n;

  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int runtime = 0, driver = 0;
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaDriverGetVersion(&driver));
  std::fprintf(stderr, "device %s, %d SMs, L2 %d MB, runtime %d, driver API %d\n", prop.name,
               prop.multiProcessorCount, prop.l2CacheSize >> 20, runtime, driver);
  // The L2 set-aside for persisting accesses (Nsight Compute's "L2 Persisting Size"): L2_PERSISTING_BYTES
  // sets it before any launch ("max": the device's largest), to see whether ordinary loads lose that part.
  if (const char* aside = std::getenv("L2_PERSISTING_BYTES")) {
    const bool most = std::strcmp(aside, "max") == 0;
    const size_t bytes =
        most ? static_cast<size_t>(prop.persistingL2CacheMaxSize) : std::strtoull(aside, nullptr, 10);
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes));
  }
  size_t persisting = 0;
  CHECK(cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize));
  std::fprintf(stderr, "l2 persisting set-aside %zu bytes (at most %d)\n", persisting,
               prop.persistingL2CacheMaxSize);

  // Inputs.
  std::vector<__half> hq(qkv), hk(qkv), hv(qkv);
  std::vector<double> rq, rk, rv;
  fill(hq, rq, o.seed, 1.0 / std::sqrt(static_cast<double>(g.d)));  // Q pre-scaled
  fill(hk, rk, o.seed + 1, 1.0);
  fill(hv, rv, o.seed + 2, 1.0);

  __half *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr, *p = nullptr;
  float *s = nullptr, *l = nullptr, *m = nullptr, *sink = nullptr;
  float4* flush = nullptr;
  CHECK(cudaMalloc(&q, qkv * sizeof(__half)));
  CHECK(cudaMalloc(&k, qkv * sizeof(__half)));
  CHECK(cudaMalloc(&v, qkv * sizeof(__half)));
  CHECK(cudaMalloc(&out, qkv * sizeof(__half)));
  CHECK(cudaMemcpy(q, hq.data(), qkv * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(k, hk.data(), qkv * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(v, hv.data(), qkv * sizeof(__half), cudaMemcpyHostToDevice));
  const bool naive = o.schedule == "naive-safe" || o.schedule == "naive-online";
  if (naive) {
    CHECK(cudaMalloc(&s, nn * sizeof(float)));
    CHECK(cudaMalloc(&p, nn * sizeof(__half)));
  }
  if (o.schedule == "flash1" || o.schedule == "two-pass") {
    CHECK(cudaMalloc(&l, rows * sizeof(float)));
    CHECK(cudaMalloc(&m, rows * sizeof(float)));
  }
  const size_t flush_bytes = std::max<size_t>(2 * static_cast<size_t>(prop.l2CacheSize), 64u << 20);
  const size_t flush4 = flush_bytes / sizeof(float4);
  if (o.reps > 0 && o.flush) {
    CHECK(cudaMalloc(&flush, flush4 * sizeof(float4)));
    CHECK(cudaMemset(flush, 0, flush4 * sizeof(float4)));
    CHECK(cudaMalloc(&sink, sizeof(float)));
  }
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));

  // One run of the schedule's counted kernels (flash1's initialiser is not one of them).
  auto run = [&]() -> int {
    if (o.kernel == "tc" && naive)
      return attnval::launch_naive_tc(g, o.schedule == "naive-online", q, k, v, s, p, out, st);
    if (o.schedule == "two-pass") return attnval::launch_two_pass_tc(g, q, k, v, l, m, out, st);
    if (o.kernel == "tc" && o.schedule == "flash1")
      return attnval::launch_flash1_tc(g, q, k, v, out, l, m, st);
    if (o.schedule == "naive-safe") return attnval::launch_naive_safe(g, q, k, v, s, p, out, st);
    if (o.schedule == "flash1") return attnval::launch_flash1(g, q, k, v, out, l, m, st);
    if (o.kernel == "tc") return attnval::launch_flash2_tc(g, q, k, v, out, st);
    return attnval::launch_flash2(g, q, k, v, out, st);
  };
  auto prepare = [&](bool flush_l2) {
    attnval::launch_poison(out, qkv, st);
    if (o.schedule == "flash1") attnval::launch_flash1_init(g, out, l, m, st);
    if (flush_l2 && flush) attnval::launch_l2_flush(flush, flush4, sink, st);
  };

  // Correctness: poisoned O, one run, every element written, sampled rows against float64.
  prepare(false);
  const int kernels = run();
  CHECK(cudaStreamSynchronize(st));
  CHECK(cudaGetLastError());
  std::vector<__half> first(qkv);
  CHECK(cudaMemcpy(first.data(), out, qkv * sizeof(__half), cudaMemcpyDeviceToHost));
  const Check c = check_output(o, first, rq, rk, rv);
  const double tolerance = 5e-3;  // attnsim's f16 tolerance

  // Timing.
  double median_ns = 0, min_ns = 0;
  int deterministic = -1;
  if (o.reps > 0) {
    for (int w = 0; w < o.warmup; ++w) {
      prepare(false);
      run();
    }
    CHECK(cudaStreamSynchronize(st));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<double> times;
    for (int r = 0; r < o.reps; ++r) {
      prepare(true);
      CHECK(cudaEventRecord(start, st));
      run();
      CHECK(cudaEventRecord(stop, st));
      CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      times.push_back(ms * 1e6);
    }
    CHECK(cudaGetLastError());
    std::sort(times.begin(), times.end());
    const size_t mid = times.size() / 2;
    median_ns = times.size() % 2 ? times[mid] : 0.5 * (times[mid - 1] + times[mid]);
    min_ns = times.front();
    std::vector<__half> last(qkv);
    CHECK(cudaMemcpy(last.data(), out, qkv * sizeof(__half), cudaMemcpyDeviceToHost));
    deterministic = std::memcmp(last.data(), first.data(), qkv * sizeof(__half)) == 0 ? 1 : 0;
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
  }

  write_block_times(o, g, run, st);
  // tc: the resources of each distinct kernel in launch order, '/'-separated (sim/validate.cpp reads
  // blocks_per_sm as one value per program kernel, or one for all: flash1's T_c launches are one kernel).
  attnval::TcKernelInfo tci[3];
  int tc_kernels = 0;
  if (o.kernel == "tc") {
    if (o.schedule == "flash2") {
      tci[0] = attnval::flash2_tc_info(g);
      tc_kernels = 1;
    } else {
      tc_kernels = attnval::tc_fwd_info(o.schedule.c_str(), g, tci);
    }
  }
  auto joined = [&](int attnval::TcKernelInfo::*field) {
    std::string out;
    for (int x = 0; x < tc_kernels; ++x) out += (x ? "/" : "") + std::to_string(tci[x].*field);
    return out;
  };
  const Bytes sched = schedule_ledger(o.schedule, g), kern = kernel_ledger(o.schedule, g);
  const bool ok = c.nonfinite == 0 && c.max_rel <= tolerance && deterministic != 0;
  std::printf(
      "RESULT schedule=%s n=%d d=%d heads=%d block_q=%d block_k=%d causal=%d dtype=f16 kernels=%d "
      "reps=%d time_ns_median=%.0f time_ns_min=%.0f max_rel_error=%.3e max_abs_error=%.3e nonfinite=%lld "
      "deterministic=%d ok=%d exp_sched_read_bytes=%.0f exp_sched_write_bytes=%.0f "
      "exp_kernel_read_bytes=%.0f "
      "exp_kernel_write_bytes=%.0f flash1_groups=%d gpu=\"%s\" cuda_runtime=%d kernel=%s",
      o.schedule.c_str(), g.n, g.d, g.heads, g.br, g.bc, g.causal ? 1 : 0, kernels, o.reps, median_ns, min_ns,
      c.max_rel, c.max_abs, static_cast<long long>(c.nonfinite), deterministic, ok ? 1 : 0, sched.read,
      sched.write, kern.read, kern.write, g.flash1_groups, prop.name, runtime, o.kernel.c_str());
  if (o.dims.keys_descending) std::printf(" keys_descending=1");
  if (o.tc_min_blocks != 1) std::printf(" tc_min_blocks=%d", o.tc_min_blocks);
  if (o.kernel == "tc")
    std::printf(" registers=%s local_bytes=%s smem_bytes=%s threads=%s blocks_per_sm=%s tc_layout=%s",
                joined(&attnval::TcKernelInfo::registers).c_str(),
                joined(&attnval::TcKernelInfo::local_bytes).c_str(),
                joined(&attnval::TcKernelInfo::smem_bytes).c_str(),
                joined(&attnval::TcKernelInfo::threads).c_str(),
                joined(&attnval::TcKernelInfo::blocks_per_sm).c_str(), o.tc_padded ? "padded" : "swizzled");
  std::printf("\n");
  if (!ok)
    std::fprintf(stderr,
                 "CHECK FAILED: max_rel_error %.3e (tolerance %.1e), %lld non-finite, deterministic %d\n",
                 c.max_rel, tolerance, static_cast<long long>(c.nonfinite), deterministic);

  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(out), cudaFree(p), cudaFree(s), cudaFree(l), cudaFree(m);
  cudaFree(flush), cudaFree(sink);
  CHECK(cudaStreamDestroy(st));
  return 0;
}
