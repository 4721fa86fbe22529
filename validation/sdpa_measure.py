#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention backends under Nsight Compute (run_dram_sweep.sh, part B).

    sdpa_measure.py run --manifest M.jsonl [--deadline-s S] [--smoke] [--shapes B,H,N,D ...] [--backends ...]
    sdpa_measure.py summarize --manifest M.jsonl --ncu-csv NCU.csv --out LAUNCHES.csv --summary-out CASES.csv
                              [--meta KEY=VALUE ...]

`run` (needs torch and a GPU; meant to run under `ncu --profile-from-start off --nvtx ...`): for each shape
(batch, heads, n, d) fp16 in the (batch, heads, n, d) layout, each causal flag and each backend
(FLASH_ATTENTION, CUDNN_ATTENTION, EFFICIENT_ATTENTION through torch.nn.attention.sdpa_kernel) it
  1. draws Q, K, V and dO (randn, fixed seed per shape), computes a float64 reference of O, dQ, dK, dV on the
     GPU (chunked over query rows; once per shape and causal flag);
  2. warms the backend up (two forward + backward passes, outside the profiled range); a backend that refuses
     the shape is recorded as unavailable, with torch's reason;
  3. profiles ONE forward and ONE backward (torch.autograd.grad with the fixed dO) inside
     cudaProfilerStart/Stop, each pass opened by a marker kernel (torch.cuda._sleep: `spin_kernel`) and an
     NVTX range "caseK/fwd" / "caseK/bwd", so every profiled launch can be assigned to its case and pass;
  4. compares the profiled pass's O, dQ, dK, dV with the reference: ||x - ref||_F / ||ref||_F, and for O also
     max|x - ref| / max|ref| (attnsim's definition).
It writes one JSON line per case (and one for the environment) to the manifest. A deadline (seconds since
start) stops it from starting new cases; the rest are recorded as skipped.

`summarize` (standard library only) splits ncu's raw CSV (`--print-kernel-base demangled`, launch order) at
the marker kernels, assigns the segments to the manifest's profiled cases in order (cross-checked with the
NVTX column where ncu printed one) and writes one row per profiled launch (LAUNCHES.csv) and one per
(case, pass) (CASES.csv: counters summed over all launches of the pass and over its attention kernels alone,
the main attention kernel's geometry, compulsory bytes, errors); unavailable and skipped cases get a row
with their status. Provenance (--meta) goes into every row; no cell holds a comma.
"""
import argparse
import json
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize_dram as sd  # noqa: E402  (the ncu CSV reader and kernel-name shortener)

BACKENDS = ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"]
# (batch, heads, n, d): lightest first, so that a deadline cuts the heaviest.
SHAPES = [(1, 16, 4096, 64), (4, 16, 4096, 64), (8, 32, 2048, 128), (1, 16, 8192, 128), (1, 16, 16384, 64),
          (1, 8, 32768, 128)]
SMOKE_SHAPES = [(1, 4, 2048, 64)]
MARKER = "spin_kernel"
# Launch roles inside a pass: PyTorch's own elementwise kernels (copies that make dO/O contiguous, fills of
# accumulators) are "other"; everything else the backend launches (its main kernel and its helpers such as
# flash's dot(dO, O) and dQ conversion, or cuDNN's compute_dot_do_o / convert_dq) is "attention".
TRIVIAL_RE = re.compile(r"elementwise_kernel|FillFunctor|direct_copy|memset|reduce_kernel", re.I)


# ----------------------------------------------------------------------------------------------------------
# run (torch)

def reference(q, k, v, do, causal, budget_bytes=2 << 30):
    """float64 O, dQ, dK, dV of softmax(QK^T / sqrt(d)) V with the top-left causal mask, chunked over rows."""
    import torch
    b, h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    Q, K, V, dO = (t.detach().double() for t in (q, k, v, do))
    O = torch.empty_like(Q)
    dQ = torch.empty_like(Q)
    dK = torch.zeros_like(K)
    dV = torch.zeros_like(V)
    chunk = max(1, min(n, budget_bytes // (4 * 8 * b * h * n)))
    cols = torch.arange(n, device=q.device)
    for r0 in range(0, n, chunk):
        r1 = min(n, r0 + chunk)
        S = torch.matmul(Q[:, :, r0:r1], K.transpose(-1, -2)) * scale
        if causal:
            rows = torch.arange(r0, r1, device=q.device)
            S.masked_fill_(cols[None, :] > rows[:, None], float("-inf"))
        P = torch.softmax(S, dim=-1)
        del S
        O[:, :, r0:r1] = torch.matmul(P, V)
        dP = torch.matmul(dO[:, :, r0:r1], V.transpose(-1, -2))
        Dr = (dO[:, :, r0:r1] * O[:, :, r0:r1]).sum(-1, keepdim=True)
        dS = P * (dP - Dr)
        del dP
        dQ[:, :, r0:r1] = torch.matmul(dS, K) * scale
        dK += torch.matmul(dS.transpose(-1, -2), Q[:, :, r0:r1]) * scale
        dV += torch.matmul(P.transpose(-1, -2), dO[:, :, r0:r1])
        del dS, P
    return O, dQ, dK, dV


def errors(got, ref):
    import torch
    g = got.detach().double()
    diff = g - ref
    fro = (torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(ref)).item()
    maxrel = (diff.abs().max() / ref.abs().max()).item()
    finite = bool(torch.isfinite(g).all().item())
    return fro if finite else float("inf"), maxrel if finite else float("inf"), finite


def run(args):
    import warnings

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    t0 = time.time()
    # PAD_MIB (environment) takes that much device memory first and holds it, so that every case's tensors
    # lie elsewhere than in a run without it: the L2's set and partition hashes see physical addresses.
    pad_mib = int(os.environ.get("PAD_MIB", "0"))
    pad = torch.empty(pad_mib << 20, dtype=torch.uint8, device="cuda")  # noqa: F841 (held to the end)
    props = torch.cuda.get_device_properties(0)
    marker_ok = hasattr(torch.cuda, "_sleep")
    env = {"type": "env", "torch": torch.__version__, "torch_cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "device": props.name,
           "sm_count": props.multi_processor_count, "l2_bytes": getattr(props, "L2_cache_size", None),
           "total_memory": props.total_memory, "marker": MARKER if marker_ok else "none", "pad_mib": pad_mib,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print("sdpa_measure env:", json.dumps(env), flush=True)
    out = open(args.manifest, "w")
    out.write(json.dumps(env) + "\n")
    out.flush()

    def mark():
        if marker_ok:
            torch.cuda._sleep(100)

    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes] if args.shapes else (
        SMOKE_SHAPES if args.smoke else SHAPES)
    causals = [int(c) for c in args.causal.split(",")]
    backends = args.backends or BACKENDS
    idx, seq = 0, 0
    for shape_no, (b, h, n, d) in enumerate(shapes):
        for causal in causals:
            base = {"type": "case", "batch": b, "heads": h, "n": n, "d": d, "causal": causal, "dtype": "f16"}
            if time.time() - t0 > args.deadline_s:
                for backend in backends:
                    rec = dict(base, idx=idx, backend=backend, status="skipped", reason="deadline")
                    out.write(json.dumps(rec) + "\n")
                    idx += 1
                out.flush()
                print(f"sdpa_measure: SKIPPED (deadline) {base}", flush=True)
                continue
            t_shape = time.time()
            gen = torch.Generator(device="cuda")
            gen.manual_seed(20240607 + 1000 * shape_no + causal)
            q, k, v, do = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=gen)
                           for _ in range(4))
            ref = reference(q, k, v, do, bool(causal))
            torch.cuda.synchronize()
            t_ref = time.time() - t_shape
            for backend in backends:
                rec = dict(base, idx=idx, backend=backend)
                idx += 1
                if time.time() - t0 > args.deadline_s:
                    rec.update(status="skipped", reason="deadline")
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    continue
                t_case = time.time()
                qq, kk, vv = (t.detach().clone().requires_grad_() for t in (q, k, v))
                be = getattr(SDPBackend, backend)
                try:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        for _ in range(2):
                            with sdpa_kernel(be):
                                o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=bool(causal))
                            grads = torch.autograd.grad(o, (qq, kk, vv), do)
                            del o, grads
                        torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001  (torch refuses with RuntimeError, others possible)
                    reasons = [str(w.message).replace("\n", " ")[:300] for w in caught]
                    rec.update(status="unavailable", reason=(str(e).splitlines() or [""])[0][:300],
                               warnings=reasons)
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    print(f"sdpa_measure: {backend} {base}: unavailable: {rec['reason']} {reasons[:2]}", flush=True)
                    torch.cuda.synchronize()
                    continue
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                rec["seq"] = seq  # order among the profiled cases: marker segments 2*seq (fwd), 2*seq+1 (bwd)
                seq += 1
                status = "measured"
                torch.cuda.profiler.start()
                try:
                    torch.cuda.nvtx.range_push(f"case{rec['idx']}/fwd")
                    mark()
                    with sdpa_kernel(be):
                        o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=bool(causal))
                    torch.cuda.synchronize()
                    torch.cuda.nvtx.range_pop()
                    torch.cuda.nvtx.range_push(f"case{rec['idx']}/bwd")
                    mark()
                    dq, dk, dv = torch.autograd.grad(o, (qq, kk, vv), do)
                    torch.cuda.synchronize()
                    torch.cuda.nvtx.range_pop()
                except Exception as e:  # noqa: BLE001
                    status = "error"
                    rec["reason"] = str(e).splitlines()[0][:300]
                finally:
                    torch.cuda.profiler.stop()
                if status == "measured":
                    eo = errors(o, ref[0])
                    rec.update(err_o_fro=eo[0], err_o_maxrel=eo[1], err_dq_fro=errors(dq, ref[1])[0],
                               err_dk_fro=errors(dk, ref[2])[0], err_dv_fro=errors(dv, ref[3])[0])
                    rec["ok"] = int(eo[2] and rec["err_o_fro"] <= 1e-2 and
                                    max(rec["err_dq_fro"], rec["err_dk_fro"], rec["err_dv_fro"]) <= 5e-2)
                    del o, dq, dk, dv
                rec.update(status=status, wall_s=round(time.time() - t_case, 2), ref_s=round(t_ref, 2))
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(f"sdpa_measure: {backend:20} b={b} h={h} n={n} d={d} c={causal}: {status} "
                      f"err_o={rec.get('err_o_fro', float('nan')):.2e} dq={rec.get('err_dq_fro', float('nan')):.2e} "
                      f"dk={rec.get('err_dk_fro', float('nan')):.2e} dv={rec.get('err_dv_fro', float('nan')):.2e} "
                      f"ok={rec.get('ok')} {rec['wall_s']} s", flush=True)
                del qq, kk, vv
                torch.cuda.empty_cache()
            del q, k, v, do, ref
            torch.cuda.empty_cache()
    out.close()
    print(f"sdpa_measure: {idx} cases, {seq} profiled, {time.time() - t0:.1f} s", flush=True)
    return 0


# ----------------------------------------------------------------------------------------------------------
# summarize (standard library only)

def read_manifest(path):
    env, cases = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if rec.get("type") == "env":
                env = rec
            else:
                cases.append(rec)
    return env, cases


def nvtx_label(cells):
    """'caseK/fwd' from whichever NVTX column ncu printed, or None."""
    for name, text in cells.items():
        if "nvtx" in name.lower() or "range" in name.lower():
            m = re.search(r"case(\d+)/(fwd|bwd)", text)
            if m:
                return int(m.group(1)), m.group(2)
    return None


def segments(launches):
    """Split launches (ID order) at marker kernels: list of segments (lists of launches), plus launches seen
    before the first marker."""
    segs, before = [], []
    for x in launches:
        if MARKER in x["kernel"]:
            segs.append([])
        elif segs:
            segs[-1].append(x)
        else:
            before.append(x)
    return segs, before


def role(kernel_base, template=""):
    return "other" if TRIVIAL_RE.search(kernel_base) or TRIVIAL_RE.search(template) else "attention"


CASE_COLUMNS = ["idx", "backend", "batch", "heads", "n", "d", "causal", "dtype", "status"]
ERR_COLUMNS = ["err_o_fro", "err_o_maxrel", "err_dq_fro", "err_dk_fro", "err_dv_fro", "ok"]
SUM_COUNTERS = [c for c, _ in sd.COUNTERS]


def compulsory(case, pass_):
    e = 2 * case["batch"] * case["heads"] * case["n"] * case["d"]  # one fp16 (b, h, n, d) tensor
    return (3 * e, e) if pass_ == "fwd" else (5 * e, 3 * e)  # fwd: Q K V -> O; bwd: Q K V O dO -> dQ dK dV


def summarize(args):
    env, cases = read_manifest(args.manifest)
    meta = sd.parse_meta(args.meta)
    launches = sd.read_ncu_raw(args.ncu_csv) if args.ncu_csv and os.path.exists(args.ncu_csv) else []
    segs, before = segments(launches)
    profiled = sorted((c for c in cases if "seq" in c), key=lambda c: c["seq"])
    if before:
        print(f"sdpa_measure summarize: {len(before)} launches before the first marker (not assigned): "
              f"{sorted(set(sd.short_kernel(x['kernel'])[0] for x in before))}", file=sys.stderr)
    if len(segs) != 2 * len(profiled):
        print(f"sdpa_measure summarize: WARNING: {len(segs)} marker segments for {len(profiled)} profiled cases "
              f"(expected {2 * len(profiled)}); assigning in order", file=sys.stderr)
    launch_rows, case_rows = [], []
    nvtx_agree = nvtx_disagree = 0
    by_seq = {}
    for s, seg in enumerate(segs):
        if s // 2 < len(profiled):
            by_seq[(profiled[s // 2]["seq"], "fwd" if s % 2 == 0 else "bwd")] = seg
    for case in cases:
        key = {c: case.get(c, "") for c in CASE_COLUMNS}
        errs = {c: ("%.3e" % case[c] if isinstance(case.get(c), float) else case.get(c, "")) for c in ERR_COLUMNS}
        if "seq" not in case or case.get("status") != "measured":
            row = {**meta, **key, **errs, "pass": "", "reason": case.get("reason", ""),
                   "warnings": " | ".join(case.get("warnings", []))[:600]}
            case_rows.append(row)
            continue
        for pass_ in ("fwd", "bwd"):
            seg = by_seq.get((case["seq"], pass_), [])
            rows = []
            for i, x in enumerate(seg):
                lab = nvtx_label(x["cells"])
                if lab is not None:
                    if lab == (case["idx"], pass_):
                        nvtx_agree += 1
                    else:
                        nvtx_disagree += 1
                r = sd.launch_row(x)
                r["role"] = role(r["kernel"], r["kernel_template"])
                r["launch"] = i
                rows.append(r)
                launch_rows.append({**meta, **key, "pass": pass_, **r, **errs})
            crow = {**meta, **key, **errs, "pass": pass_, "kernels": len(rows),
                    "attention_kernels": sum(r["role"] == "attention" for r in rows),
                    "kernel_names": "/".join(r["kernel"] for r in rows)}
            for c in SUM_COUNTERS:
                vals = [r[c] for r in rows]
                crow[c] = sd.fmt(sum(float(v) for v in vals)) if vals and all(v != "" for v in vals) else ""
                avals = [r[c] for r in rows if r["role"] == "attention"]
                crow["attn_" + c] = (sd.fmt(sum(float(v) for v in avals))
                                     if avals and all(v != "" for v in avals) else "")
            attn = [r for r in rows if r["role"] == "attention"]
            main = max(attn or rows, key=lambda r: float(r["time_ns"] or 0), default=None)
            if main:
                crow["main_kernel"] = main["kernel"]
                crow["main_kernel_template"] = main["kernel_template"]
                for c, _ in sd.GEOMETRY:
                    crow["main_" + c] = main[c]
            cr, cw = compulsory(case, pass_)
            crow["compulsory_read_bytes"], crow["compulsory_write_bytes"] = cr, cw
            for c in ("dram_read_bytes", "attn_dram_read_bytes"):
                crow[c.replace("_bytes", "") + "_over_compulsory"] = (
                    "%.4f" % (float(crow[c]) / cr) if crow.get(c) else "")
            crow["wall_s"] = case.get("wall_s", "")
            case_rows.append(crow)
    if nvtx_agree or nvtx_disagree:
        print(f"sdpa_measure summarize: NVTX labels agree with the marker segmentation for {nvtx_agree} launches, "
              f"disagree for {nvtx_disagree}", file=sys.stderr)
    else:
        print("sdpa_measure summarize: no NVTX column in ncu's CSV; segmentation by marker kernels only",
              file=sys.stderr)

    lcols = (list(meta) + CASE_COLUMNS + ["pass", "launch", "ncu_id", "kernel", "role", "kernel_template"]
             + [c for c, _ in sd.GEOMETRY] + SUM_COUNTERS + ERR_COLUMNS)
    ccols = (list(meta) + CASE_COLUMNS + ["pass", "kernels", "attention_kernels", "kernel_names"] + SUM_COUNTERS
             + ["attn_" + c for c in SUM_COUNTERS] + ["compulsory_read_bytes", "compulsory_write_bytes",
                                                     "dram_read_over_compulsory", "attn_dram_read_over_compulsory",
                                                     "main_kernel", "main_kernel_template"]
             + ["main_" + c for c, _ in sd.GEOMETRY] + ERR_COLUMNS + ["wall_s", "reason", "warnings"])
    sd.write_csv(args.out, launch_rows, lcols)
    sd.write_csv(args.summary_out, case_rows, ccols)
    f = "{:20} {:>2} {:>3} {:>6} {:>4} {:>2} {:4} {:>3} {:>13} {:>13} {:>12} {:>6} {:>10} {:>4} {:>8} {:>6} {:>10} {:>9}"
    print(f.format("backend", "b", "h", "n", "d", "c", "pass", "krn", "L2->SM read", "DRAM read", "DRAM write",
                   "rd/min", "grid", "blk", "smem", "waves", "time us", "err"))
    for r in case_rows:
        if r.get("pass"):
            smem = sum(float(r.get("main_" + c) or 0) for c in ("smem_static_bytes", "smem_dynamic_bytes"))
            print(f.format(r["backend"], r["batch"], r["heads"], r["n"], r["d"], r["causal"], r["pass"], r["kernels"],
                           r["l1_read_bytes"], r["dram_read_bytes"], r["dram_write_bytes"],
                           r["dram_read_over_compulsory"], r.get("main_grid_size", ""), r.get("main_block_size", ""),
                           "%d" % smem, r.get("main_waves_per_sm", "")[:6],
                           "%.1f" % (float(r["time_ns"] or 0) / 1e3),
                           r["err_o_fro"] if r["pass"] == "fwd" else r["err_dq_fro"]))
        else:
            print(f"{r['backend']:20} b={r['batch']} h={r['heads']} n={r['n']} d={r['d']} c={r['causal']}: "
                  f"{r['status']} {r.get('reason', '')}")
    print(f"sdpa_measure summarize: {len(launch_rows)} launches, {len(case_rows)} case rows; env {json.dumps(env)}")
    return 0 if launch_rows else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--manifest", required=True)
    r.add_argument("--deadline-s", type=float, default=1e9, help="start no new case after this many seconds")
    r.add_argument("--smoke", action="store_true", help="one small shape")
    r.add_argument("--shapes", nargs="*", help="B,H,N,D ... (default: the sweep)")
    r.add_argument("--causal", default="0,1")
    r.add_argument("--backends", nargs="*", choices=BACKENDS)
    s = sub.add_parser("summarize")
    s.add_argument("--manifest", required=True)
    s.add_argument("--ncu-csv")
    s.add_argument("--out", required=True)
    s.add_argument("--summary-out", required=True)
    s.add_argument("--meta", nargs="*", default=[])
    args = ap.parse_args()
    return run(args) if args.cmd == "run" else summarize(args)


if __name__ == "__main__":
    sys.exit(main())
