# PyTorch's memory-efficient backward on fewer SMs: the same call (torch.ops.aten._efficient_attention_backward,
# as SDPA calls it) in a CUDA green context of SMS SMs, so that fewer thread blocks, and fewer heads, run at a
# time while the tensors, their addresses and the grid stay the same. Run under ncu -k regex:fmha_cutlassB
# --profile-from-start off (run_memeff_sms.sh): one profiled launch per case and SM count. Before each, a
# kernel of one 512-thread block per SM in the same context records which SMs it has (%smid, in the order
# blocks landed). Lines: "PROBE case sms smids..." in the order ncu profiles the launches.
import ctypes, os, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import green_context

lib = ctypes.CDLL(sys.argv[1])
lib.launch_smids.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
op_f = torch.ops.aten._efficient_attention_forward
op_b = torch.ops.aten._efficient_attention_backward
CASES = os.environ.get("CASES", "1,16,8192,128,0 1,16,8192,128,1 8,32,2048,128,0 1,8,32768,128,0 1,16,16384,64,0")
SMS = [int(s) for s in os.environ.get("SMS", "16 32 48 64 80 96 112 128 0").split()]  # 0: no green context
ALL = torch.cuda.get_device_properties(0).multi_processor_count
# bwd, fwd, sdpa_cudnn / sdpa_flash (that backend's SDPA forward) or sdpa_flash_bwd (FlashAttention-2's SDPA
# backward: its forward runs in the profiled range too, left out by run_memeff_profile.sh's kernel filter)
PASS = os.environ.get("PASS", "bwd")
SDPA = {"sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_flash": SDPBackend.FLASH_ATTENTION}


def smids(blocks):
    return green_context.smids(lib, blocks)


torch.manual_seed(0)
# PAD_MIB: that much device memory taken first and held, so that the tensors lie elsewhere (as sdpa_measure.py)
pad = torch.empty(int(os.environ.get("PAD_MIB", "0")) << 20, dtype=torch.uint8, device="cuda")
contexts = {s: green_context.create(s) for s in SMS if s}
for spec in CASES.split():
    b, h, n, d, causal = (int(x) for x in spec.split(","))
    name = f"{b}x{h}x{n}x{d}_c{causal}"
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(3))
    do = torch.randn(b, n, h, d, device="cuda", dtype=torch.float16)
    out, lse, seed, off = op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)[:4]
    for sms in SMS:
        ctx = contexts.get(sms)
        if ctx is not None:
            ctx.set_context()
        used = smids(4 * ALL)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        if PASS == "fwd":  # the forward instead (run_memeff_profile.sh PASS=fwd)
            grads = op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)
        elif PASS in SDPA:  # another backend's forward, as sdpa_measure.py calls it
            with sdpa_kernel(SDPA[PASS]):
                grads = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)),
                                                       is_causal=bool(causal))
        elif PASS == "sdpa_flash_bwd":
            leaves = [t.transpose(1, 2).detach().requires_grad_() for t in (q, k, v)]
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(*leaves, is_causal=bool(causal))
                o.backward(do.transpose(1, 2))
            grads = [t.grad for t in leaves]
            del o, leaves
        else:
            grads = op_b(do, q, k, v, None, out, None, None, n, n, lse, 0.0, seed, off, causal, False)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        if ctx is not None:
            ctx.pop_context()
        print(f"PROBE {name} {sms or ALL} {len(used)} {' '.join(map(str, used))}", flush=True)
        del grads
    del q, k, v, do, out, lse
    torch.cuda.empty_cache()
