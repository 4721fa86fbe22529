# Does the memory-efficient backward's per-block D prologue (every block reads its head's O and dO) cost DRAM
# reads? The kernel (torch.ops.aten._efficient_attention_backward, as SDPA calls it) runs three times per
# case, one launch each profiled: with its O ("normal", twice) and with O replaced by dO ("alias_o_do": the
# prologue then reads dO twice, lines the main loop reads too; the gradients are wrong, the bytes are what is
# measured). LAYOUT=bnhd (the default): all tensors (b, n, h, d) contiguous; LAYOUT=sdpa: Q, K, V as SDPA
# hands them over, (b, n, h, d) views of (b, h, n, d) tensors (a head's rows contiguous: see
# memeff_stride_probe.py), dO and O (b, n, h, d) contiguous. Run under ncu --profile-from-start off
# --cache-control all. SHAPES="B,H,N,D ..." replaces the two shapes; PAD_MIB takes that much device memory
# first, so that the tensors lie elsewhere.
import os
import torch, sys
torch.manual_seed(0)
pad = torch.empty(int(os.environ.get("PAD_MIB", "0")) << 20, dtype=torch.uint8, device="cuda")
op_f = torch.ops.aten._efficient_attention_forward
op_b = torch.ops.aten._efficient_attention_backward
SHAPES = os.environ.get("SHAPES", "1,4,8192,128 1,16,8192,128")
LAYOUT = os.environ.get("LAYOUT", "bnhd")
if LAYOUT not in ("bnhd", "sdpa"):
    sys.exit(f"LAYOUT={LAYOUT}: bnhd or sdpa")


def qkv_do(b, h, n, d):
    qkv = [torch.randn(b, h, n, d, device="cuda", dtype=torch.float16).transpose(1, 2) if LAYOUT == "sdpa"
           else torch.randn(b, n, h, d, device="cuda", dtype=torch.float16) for _ in range(3)]
    return qkv + [torch.randn(b, n, h, d, device="cuda", dtype=torch.float16)]

for (b, h, n, d) in [tuple(int(v) for v in s.split(",")) for s in SHAPES.split()]:
    for causal in (0, 1):
        q, k, v, do = qkv_do(b, h, n, d)
        res = op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)
        out, lse, seed, off = res[0], res[1], res[2], res[3]
        for variant in ("normal", "alias_o_do", "normal2"):
            o_arg = do if variant == "alias_o_do" else out
            for rep in range(3):
                if rep == 2:
                    torch.cuda.synchronize(); torch.cuda.profiler.start()
                g = op_b(do, q, k, v, None, o_arg, None, None, n, n, lse, 0.0, seed, off, causal, False)
                if rep == 2:
                    torch.cuda.synchronize(); torch.cuda.profiler.stop()
            print(f"case {b}x{h}x{n}x{d} causal={causal} {variant} layout={LAYOUT}", flush=True)
