# One PyTorch SDPA pass measured again and again (run_sdpa_repeat.sh): in one process on the same tensors
# (the same physical pages), and in separate processes whose tensors sit elsewhere (PAD_MIB x the process
# number of memory taken first), to tell how much of the spread between measurements comes with where the
# tensors lie and how much with the launch itself. Default: FlashAttention-2's causal forward at
# 1 x 8 x 32,768 x 128 (521, 558 and 623 MB of DRAM reads in three earlier sweeps). BACKEND (FLASH_ATTENTION,
# EFFICIENT_ATTENTION, CUDNN_ATTENTION), PASS (fwd or bwd: the backward of a fresh forward, dO fixed), SHAPE
# (B,H,N,D) and CALLS choose. Run under ncu (--cache-control all: the L2 flushed before each profiled launch),
# one process per call: python3 sdpa_repeat.py LIB.so PROCESS. Prints "PROBE process call causal" after each
# profiled pass (with the mask CALLS times, then once without); the first process also finds each SM's L2
# partition (sm_sides.py).
import ctypes
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

process = int(sys.argv[2])
pad = torch.empty((int(os.environ.get("PAD_MIB", "37")) * process) << 20, dtype=torch.uint8, device="cuda")
B, H, N, D = (int(v) for v in os.environ.get("SHAPE", "1,8,32768,128").split(","))
CALLS = int(os.environ.get("CALLS", "3"))
BACKEND = getattr(SDPBackend, os.environ.get("BACKEND", "FLASH_ATTENTION"))
BACKWARD = os.environ.get("PASS", "fwd") == "bwd"
torch.manual_seed(process)
q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.float16, requires_grad=BACKWARD) for _ in range(3))
do = torch.randn(B, H, N, D, device="cuda", dtype=torch.float16)


def run(causal, profiled):
    """One forward (profiled unless PASS=bwd) or one forward and its backward (the backward profiled)."""
    if profiled and not BACKWARD:
        torch.cuda.profiler.start()
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    if BACKWARD:
        torch.cuda.synchronize()
        if profiled:
            torch.cuda.profiler.start()
        torch.autograd.grad(out, (q, k, v), do)
    torch.cuda.synchronize()
    if profiled:
        torch.cuda.profiler.stop()


with sdpa_kernel(BACKEND):
    run(True, False)  # warm-up, not profiled
    for causal, calls in ((True, CALLS), (False, 1)):
        for call in range(calls):
            run(causal, True)
            print(f"PROBE {process} {call} {int(causal)}", flush=True)
if process == 1:
    del q, k, v, do, pad
    torch.cuda.empty_cache()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sm_sides  # noqa: E402

    sm_sides.sm_sides(ctypes.CDLL(sys.argv[1]))
