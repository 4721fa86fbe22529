// Harness for the tensor-core backward kernels (kernels_tc_bwd.cu): one configuration per process.
//
//   harness_bwd --schedule flash2-bwd|flash2-bwd-no-d --n N --d D --heads H [--block B | --block-q BR
//               --block-k BC] [--causal] [--reps R] [--warmup W] [--seed S] [--no-flush] [--dry-run]
//   harness_bwd --list      the configurations of validation/tc_configs_bwd.txt's kind, one per line
//
// Inputs as docs/schedules.md's backward programs: Q (seed, scaled by 1/sqrt(d)), K (seed + 1), V (seed + 2),
// dO (seed + 3), fp16 uniform in [-1, 1) as harness.cu draws them; O and the logsumexp L computed here in
// float64 from those values (every row), uploaded as fp16 and f32. The run: outputs poisoned (NaN), f32
// accumulators zeroed (aux_*, not counted), the schedule's counted kernels once; every output element
// written; dQ on 64 sampled rows and dK, dV on 64 sampled key rows per head against float64 gradients
// derived directly (P = exp(S - L), dV = P^T dO, dP = dO V^T, D = rowsum(P o dP), dS = P o (dP - D),
// dQ = dS K, dK = dS^T Q), error max |x - ref| / max |ref| per tensor, max_rel_error the largest of the
// three; tolerance 1e-2 (fp16 inputs, P and dS rounded to fp16, f32 accumulation over n terms). Then R
// timed runs (CUDA events around the counted kernels only; poison, zeroing and an L2 flush before each,
// outside the events). deterministic=1 if the last run reproduced the first bit for bit: the f32 atomics
// make the order of additions vary, so it is printed but not required for ok.
//
// Bytes between the SMs and L2 (per head as docs/schedules.md's "HBM bytes per head", times heads):
//   exp_sched_*: the simulator's ledger, where a STORE_ADD reads and writes its f32 tile;
//   exp_kernel_*: what these kernels should move as Nsight Compute counts it: the same, except that a
//     red.global.add moves its data to L2 once and L2 does the addition, so the accumulators are counted
//     as writes only (no read): flash2-bwd's dQ R.d.4 written, not read; no-D's dK, dV C.d.4 each written,
//     not read. This is what validation/README.md reports for flash-attn's dQaccum atomics under ncu
//     (l1tex__m_l1tex2xbar_write_bytes counts red.global.add's bytes as writes, read bytes none), so
//     exp_kernel_* is the expectation to believe; exp_sched_* is what `attnsim validate` compares with.
//     Measured on the H100 (2026-11-23, ncu --cache-control all --clock-control base, n = 1024, 8 heads:
//     flash2-bwd 64x64 d64 and 64x128 d128, no-D 64x64 d64 and 128x64 d128, causal 0 and 1): SM <- L2 and
//     SM -> L2 bytes (l1tex__m_xbar2l1tex_read_bytes, l1tex__m_l1tex2xbar_write_bytes, summed over the
//     sched_* launches) equal exp_kernel_* exactly in all 8; the ledger's reads exceed them by the
//     accumulators' R.d.4 (flash2-bwd) or 2C.d.4 (no-D).
// Prints one line "RESULT key=value ..." (per-kernel fields '/'-separated in launch order, as
// sim/validate.cpp reads blocks_per_sm). Exit 0 even if the check fails (ok=0); 2 on a CUDA or usage error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"
#include "kernels_tc_bwd.h"

namespace {

using attnval::BwdDims;

struct Options {
  std::string schedule;
  BwdDims dims;
  int reps = 10, warmup = 3;
  uint64_t seed = 20240607;
  bool flush = true, dry_run = false;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "error: %s\nusage: harness_bwd --schedule flash2-bwd|flash2-bwd-no-d --n N --d D --heads H "
               "[--block B | --block-q BR --block-k BC] [--causal] [--reps R] [--warmup W] [--seed S] "
               "[--no-flush] [--dry-run]\n       harness_bwd --list\n",
               msg);
  std::exit(2);
}

void print_sweep() {
  for (const char* s : {"flash2-bwd", "flash2-bwd-no-d"})
    for (int n : {1024, 4096})
      for (int d : {64, 128})
        for (int causal : {0, 1})
          std::printf("--schedule %s --n %d --d %d --heads 8 --block 64%s\n", s, n, d,
                      causal ? " --causal" : "");
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
    } else if (a == "--causal") {
      o.dims.causal = true;
    } else if (a == "--reps") {
      o.reps = integer(i);
    } else if (a == "--warmup") {
      o.warmup = integer(i);
    } else if (a == "--seed") {
      o.seed = std::strtoull(value(i), nullptr, 10);
    } else if (a == "--no-flush") {
      o.flush = false;
    } else if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "-h" || a == "--help") {
      usage("help");
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (o.schedule != "flash2-bwd" && o.schedule != "flash2-bwd-no-d")
    usage("--schedule must be flash2-bwd or flash2-bwd-no-d");
  const BwdDims& d = o.dims;
  if (!attnval::bwd_supported(o.schedule, d.d, d.br, d.bc))
    usage("supported: --d 64|128; flash2-bwd B_r x B_c 64x64, 64x128; flash2-bwd-no-d 64x64, 128x64");
  if (d.n <= 0 || d.n % d.br != 0 || d.n % d.bc != 0)
    usage("--n must be a positive multiple of the blocks (no ragged tiles)");
  if (d.heads <= 0) usage("--heads must be positive");
  return o;
}

struct Bytes {
  double read = 0, write = 0;
};

// R: query rows summed over K/V blocks; C: key rows summed over query blocks (docs/schedules.md).
double rows_r(const BwdDims& g) {
  double r = 0;
  for (int j = 0; j < g.n / g.bc; ++j) r += g.causal ? g.n - std::floor(double(j) * g.bc / g.br) * g.br : g.n;
  return r;
}
double rows_c(const BwdDims& g) {
  double c = 0;
  for (int i = 0; i < g.n / g.br; ++i) {
    const double last = double(i) * g.br + g.br - 1;
    c += g.causal ? std::min<double>(g.n, (std::floor(last / g.bc) + 1) * g.bc) : g.n;
  }
  return c;
}

// The simulator's ledger (STORE_ADD = read + write of the f32 tile), all heads.
Bytes schedule_ledger(const std::string& s, const BwdDims& g) {
  const double n = g.n, d = g.d, e = 2, f = 4, R = rows_r(g), C = rows_c(g);
  Bytes b;
  if (s == "flash2-bwd") {
    // Q, K, V, dO (pass 1 and 2), O, L, D, dQ | D, dQ, dK, dV.
    b.read = R * d * e + n * d * e + n * d * e + (n + R) * d * e + n * d * e + R * f + R * f + R * d * f;
    b.write = n * f + R * d * f + 2 * n * d * e;
  } else {
    // Q, K, V, dO, L, dK, dV | dQ, dK, dV.
    b.read = n * d * e + 2 * C * d * e + 2 * C * d * e + n * d * e + n * f + 2 * C * d * f;
    b.write = n * d * e + 2 * C * d * f;
  }
  b.read *= g.heads;
  b.write *= g.heads;
  return b;
}

// What these kernels move as ncu counts it: red.global.add's bytes are writes only (see the header).
Bytes kernel_ledger(const std::string& s, const BwdDims& g) {
  Bytes b = schedule_ledger(s, g);
  const double d = g.d, f = 4;
  if (s == "flash2-bwd")
    b.read -= g.heads * rows_r(g) * d * f;
  else
    b.read -= g.heads * 2 * rows_c(g) * d * f;
  return b;
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

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

// Runs body(index) for index in [0, count) on the machine's threads.
template <typename F>
void parallel_for(size_t count, F&& body) {
  const unsigned workers = std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (size_t x = w; x < count; x += workers) body(x);
    });
  for (auto& t : pool) t.join();
}

struct Host {
  std::vector<double> q, k, v, dout;  // the fp16 inputs as doubles
  std::vector<double> o, lse, dvec;   // float64 O, L = m + log l, D = rowsum(P o dP), every row
};

// O, L, D of every row in float64.
void forward_reference(const BwdDims& g, Host& x) {
  const int n = g.n, d = g.d;
  x.o.assign(static_cast<size_t>(g.heads) * n * d, 0.0);
  x.lse.assign(static_cast<size_t>(g.heads) * n, 0.0);
  x.dvec.assign(static_cast<size_t>(g.heads) * n, 0.0);
  parallel_for(static_cast<size_t>(g.heads) * n, [&](size_t hr) {
    const size_t h = hr / n, r = hr % n, off = h * n * d;
    const int keys = g.causal ? static_cast<int>(r) + 1 : n;
    std::vector<double> s(keys), acc(d, 0.0);
    double m = -INFINITY;
    for (int kk = 0; kk < keys; ++kk) {
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += x.q[off + r * d + c] * x.k[off + size_t(kk) * d + c];
      s[kk] = dot;
      m = std::max(m, dot);
    }
    double l = 0;
    for (int kk = 0; kk < keys; ++kk) l += std::exp(s[kk] - m);
    const double lse = m + std::log(l);
    double dsum = 0;
    for (int kk = 0; kk < keys; ++kk) {
      const double p = std::exp(s[kk] - lse);
      double dp = 0;
      for (int c = 0; c < d; ++c) {
        acc[c] += p * x.v[off + size_t(kk) * d + c];
        dp += x.dout[off + r * d + c] * x.v[off + size_t(kk) * d + c];
      }
      dsum += p * dp;
    }
    for (int c = 0; c < d; ++c) x.o[off + r * d + c] = acc[c];
    x.lse[hr] = lse;
    x.dvec[hr] = dsum;
  });
}

struct Err {
  double max_abs = 0, scale = 0;
  double rel() const { return scale > 0 ? max_abs / scale : max_abs; }
};
void note(Err& e, double got, double ref) {
  double err = std::fabs(got - ref);
  if (std::isnan(err)) err = INFINITY;
  e.max_abs = std::max(e.max_abs, err);
  e.scale = std::max(e.scale, std::fabs(ref));
}

// dQ on sampled rows, dK and dV on sampled key rows, against float64 gradients.
void check_grads(const BwdDims& g, const Host& x, const std::vector<float>& dq, const std::vector<float>& dk,
                 const std::vector<float>& dv, Err& eq, Err& ek, Err& ev) {
  const int n = g.n, d = g.d;
  auto score = [&](size_t off, int r, int kk) {
    double dot = 0;
    for (int c = 0; c < d; ++c) dot += x.q[off + size_t(r) * d + c] * x.k[off + size_t(kk) * d + c];
    return dot;
  };
  auto dprob = [&](size_t off, int r, int kk) {
    double dot = 0;
    for (int c = 0; c < d; ++c) dot += x.dout[off + size_t(r) * d + c] * x.v[off + size_t(kk) * d + c];
    return dot;
  };
  const std::vector<int> rows = sample_rows(n);
  std::vector<Err> pq(g.heads * rows.size()), pk(pq.size()), pv(pq.size());
  parallel_for(pq.size(), [&](size_t idx) {
    const int h = static_cast<int>(idx / rows.size()), r = rows[idx % rows.size()];
    const size_t off = size_t(h) * n * d, hr = size_t(h) * n;
    std::vector<double> acc(d, 0.0);
    // dQ_r = sum_k dS_rk K_k.
    for (int kk = 0; kk < (g.causal ? r + 1 : n); ++kk) {
      const double p = std::exp(score(off, r, kk) - x.lse[hr + r]);
      const double ds = p * (dprob(off, r, kk) - x.dvec[hr + r]);
      for (int c = 0; c < d; ++c) acc[c] += ds * x.k[off + size_t(kk) * d + c];
    }
    for (int c = 0; c < d; ++c) note(pq[idx], dq[off + size_t(r) * d + c], acc[c]);
    // Key row kk = r: dV_k = sum_q P_qk dO_q, dK_k = sum_q dS_qk Q_q.
    const int kk = r;
    std::vector<double> av(d, 0.0), ak(d, 0.0);
    for (int q = g.causal ? kk : 0; q < n; ++q) {
      const double p = std::exp(score(off, q, kk) - x.lse[hr + q]);
      const double ds = p * (dprob(off, q, kk) - x.dvec[hr + q]);
      for (int c = 0; c < d; ++c) {
        av[c] += p * x.dout[off + size_t(q) * d + c];
        ak[c] += ds * x.q[off + size_t(q) * d + c];
      }
    }
    for (int c = 0; c < d; ++c) {
      note(pv[idx], dv[off + size_t(kk) * d + c], av[c]);
      note(pk[idx], dk[off + size_t(kk) * d + c], ak[c]);
    }
  });
  for (size_t i = 0; i < pq.size(); ++i) {
    for (auto [from, to] : {std::pair{&pq[i], &eq}, std::pair{&pk[i], &ek}, std::pair{&pv[i], &ev}}) {
      to->max_abs = std::max(to->max_abs, from->max_abs);
      to->scale = std::max(to->scale, from->scale);
    }
  }
}

std::vector<float> to_float(const std::vector<__half>& h) {
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = __half2float(h[i]);
  return f;
}

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, host.size() * sizeof(T)));
  CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const BwdDims& g = o.dims;
  const bool with_d = o.schedule == "flash2-bwd";
  const Bytes sched = schedule_ledger(o.schedule, g), kern = kernel_ledger(o.schedule, g);
  if (o.dry_run) {
    std::printf(
        "EXPECTED schedule=%s n=%d d=%d heads=%d block_q=%d block_k=%d causal=%d dtype=f16 "
        "exp_sched_read_bytes=%.0f exp_sched_write_bytes=%.0f exp_kernel_read_bytes=%.0f "
        "exp_kernel_write_bytes=%.0f\n",
        o.schedule.c_str(), g.n, g.d, g.heads, g.br, g.bc, g.causal ? 1 : 0, sched.read, sched.write,
        kern.read, kern.write);
    return 0;
  }
  const size_t elems = static_cast<size_t>(g.heads) * g.n * g.d, rows = static_cast<size_t>(g.heads) * g.n;

  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int runtime = 0;
  CHECK(cudaRuntimeGetVersion(&runtime));
  std::fprintf(stderr, "device %s, %d SMs, L2 %d MB, runtime %d\n", prop.name, prop.multiProcessorCount,
               prop.l2CacheSize >> 20, runtime);

  // Inputs, and O, L from them in float64.
  Host x;
  std::vector<__half> hq(elems), hk(elems), hv(elems), hdo(elems), ho(elems);
  fill(hq, x.q, o.seed, 1.0 / std::sqrt(static_cast<double>(g.d)));
  fill(hk, x.k, o.seed + 1, 1.0);
  fill(hv, x.v, o.seed + 2, 1.0);
  fill(hdo, x.dout, o.seed + 3, 1.0);
  forward_reference(g, x);
  std::vector<float> hl(rows);
  for (size_t i = 0; i < elems; ++i) ho[i] = __float2half(static_cast<float>(x.o[i]));
  for (size_t i = 0; i < rows; ++i) hl[i] = static_cast<float>(x.lse[i]);

  attnval::BwdBuffers b;
  __half* q = device_copy(hq);
  __half* k = device_copy(hk);
  __half* v = device_copy(hv);
  __half* dout = device_copy(hdo);
  __half* out_o = device_copy(ho);
  float* lse = device_copy(hl);
  b.q = q, b.k = k, b.v = v, b.dout = dout, b.o = out_o, b.lse = lse;
  // Outputs: flash2-bwd dQ f32, dK, dV fp16, D; no-D dQ fp16, dK, dV f32.
  std::vector<std::pair<void*, size_t>> outputs;  // poisoned before each run
  if (with_d) {
    CHECK(cudaMalloc(&b.dvec, rows * sizeof(float)));
    CHECK(cudaMalloc(&b.dq32, elems * sizeof(float)));
    CHECK(cudaMalloc(&b.dk16, elems * sizeof(__half)));
    CHECK(cudaMalloc(&b.dv16, elems * sizeof(__half)));
    outputs = {
        {b.dvec, rows * sizeof(float)}, {b.dk16, elems * sizeof(__half)}, {b.dv16, elems * sizeof(__half)}};
  } else {
    CHECK(cudaMalloc(&b.dq16, elems * sizeof(__half)));
    CHECK(cudaMalloc(&b.dk32, elems * sizeof(float)));
    CHECK(cudaMalloc(&b.dv32, elems * sizeof(float)));
    outputs = {{b.dq16, elems * sizeof(__half)}};
  }
  float4* flush = nullptr;
  float* sink = nullptr;
  const size_t flush_bytes = std::max<size_t>(2 * static_cast<size_t>(prop.l2CacheSize), 64u << 20);
  const size_t flush4 = flush_bytes / sizeof(float4);
  if (o.reps > 0 && o.flush) {
    CHECK(cudaMalloc(&flush, flush4 * sizeof(float4)));
    CHECK(cudaMemset(flush, 0, flush4 * sizeof(float4)));
    CHECK(cudaMalloc(&sink, sizeof(float)));
  }
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));

  auto run = [&]() { return attnval::launch_bwd(o.schedule, g, b, st); };
  auto prepare = [&](bool flush_l2) {
    for (auto [p, bytes] : outputs) attnval::launch_bwd_poison(p, bytes, st);
    attnval::launch_bwd_zero(o.schedule, g, b, st);
    if (flush_l2 && flush) attnval::launch_bwd_flush(flush, flush4, sink, st);
  };
  // The gradients as floats (whatever their storage type).
  auto fetch = [&](std::vector<float>& dq, std::vector<float>& dk, std::vector<float>& dv) {
    auto get32 = [&](const float* p, std::vector<float>& to) {
      to.resize(elems);
      CHECK(cudaMemcpy(to.data(), p, elems * sizeof(float), cudaMemcpyDeviceToHost));
    };
    auto get16 = [&](const __half* p, std::vector<float>& to) {
      std::vector<__half> h(elems);
      CHECK(cudaMemcpy(h.data(), p, elems * sizeof(__half), cudaMemcpyDeviceToHost));
      to = to_float(h);
    };
    if (with_d) {
      get32(b.dq32, dq), get16(b.dk16, dk), get16(b.dv16, dv);
    } else {
      get16(b.dq16, dq), get32(b.dk32, dk), get32(b.dv32, dv);
    }
  };

  // Correctness.
  prepare(false);
  const int kernels = run();
  CHECK(cudaStreamSynchronize(st));
  CHECK(cudaGetLastError());
  std::vector<float> dq, dk, dv;
  fetch(dq, dk, dv);
  int64_t nonfinite = 0;
  for (const auto* t : {&dq, &dk, &dv})
    for (float f : *t)
      if (!std::isfinite(f)) ++nonfinite;
  if (with_d) {  // D written everywhere too
    std::vector<float> hd(rows);
    CHECK(cudaMemcpy(hd.data(), b.dvec, rows * sizeof(float), cudaMemcpyDeviceToHost));
    for (float f : hd)
      if (!std::isfinite(f)) ++nonfinite;
  }
  Err eq, ek, ev;
  check_grads(g, x, dq, dk, dv, eq, ek, ev);
  const double max_rel = std::max({eq.rel(), ek.rel(), ev.rel()});
  const double max_abs = std::max({eq.max_abs, ek.max_abs, ev.max_abs});
  const double tolerance = 1e-2;

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
    std::vector<float> lq, lk, lv;
    fetch(lq, lk, lv);
    deterministic = lq == dq && lk == dk && lv == dv ? 1 : 0;
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
  }

  const std::vector<attnval::BwdKernelInfo> info = attnval::bwd_info(o.schedule, g);
  auto joined = [&](auto field) {
    std::string s;
    for (const auto& i : info) s += (s.empty() ? "" : "/") + field(i);
    return s;
  };
  using KI = attnval::BwdKernelInfo;
  const bool ok = nonfinite == 0 && max_rel <= tolerance;
  std::printf(
      "RESULT schedule=%s n=%d d=%d heads=%d block_q=%d block_k=%d causal=%d dtype=f16 kernels=%d reps=%d "
      "time_ns_median=%.0f time_ns_min=%.0f max_rel_error=%.3e max_abs_error=%.3e rel_error_dq=%.3e "
      "rel_error_dk=%.3e rel_error_dv=%.3e nonfinite=%lld deterministic=%d ok=%d exp_sched_read_bytes=%.0f "
      "exp_sched_write_bytes=%.0f exp_kernel_read_bytes=%.0f exp_kernel_write_bytes=%.0f gpu=\"%s\" "
      "cuda_runtime=%d kernel=tc registers=%s local_bytes=%s smem_bytes=%s threads=%s blocks_per_sm=%s "
      "kernel_names=%s tc_layout=swizzled\n",
      o.schedule.c_str(), g.n, g.d, g.heads, g.br, g.bc, g.causal ? 1 : 0, kernels, o.reps, median_ns, min_ns,
      max_rel, max_abs, eq.rel(), ek.rel(), ev.rel(), static_cast<long long>(nonfinite), deterministic,
      ok ? 1 : 0, sched.read, sched.write, kern.read, kern.write, prop.name, runtime,
      joined([](const KI& i) { return std::to_string(i.registers); }).c_str(),
      joined([](const KI& i) { return std::to_string(i.local_bytes); }).c_str(),
      joined([](const KI& i) { return std::to_string(i.smem_bytes); }).c_str(),
      joined([](const KI& i) { return std::to_string(i.threads); }).c_str(),
      joined([](const KI& i) { return std::to_string(i.blocks_per_sm); }).c_str(),
      joined([](const KI& i) { return i.name; }).c_str());
  if (!ok)
    std::fprintf(stderr, "CHECK FAILED: max_rel_error %.3e (tolerance %.1e), %lld non-finite\n", max_rel,
                 tolerance, static_cast<long long>(nonfinite));

  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(dout), cudaFree(out_o), cudaFree(lse);
  cudaFree(b.dvec), cudaFree(b.dq32), cudaFree(b.dk16), cudaFree(b.dv16), cudaFree(b.dq16), cudaFree(b.dk32);
  cudaFree(b.dv32), cudaFree(flush), cudaFree(sink);
  CHECK(cudaStreamDestroy(st));
  return 0;
}
