# FlashAttention-2's causal forward at 1 x 8 x 32,768 x 128 (PyTorch SDPA, flash backend) measured again and
# again: in one process on the same tensors (the same physical pages), and in separate processes whose
# tensors sit elsewhere (PAD_MIB x the process number of memory taken first), to tell how much of the
# spread between measurements (521, 558 and 623 MB of DRAM reads in three earlier sweeps) comes with where
# the tensors lie. Run by run_fa2_causal_repeat.sh under ncu (--cache-control all: the L2 flushed before each
# profiled launch), one process per call: python3 fa2_causal_repeat.py LIB.so PROCESS. Prints "PROBE process
# call causal" in the order ncu profiles the launches; the first process also finds each SM's partition
# (memeff_room_probe.py's timing of SM pairs).
import ctypes
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

process = int(sys.argv[2])
pad = torch.empty((int(os.environ.get("PAD_MIB", "37")) * process) << 20, dtype=torch.uint8, device="cuda")
B, H, N, D = (int(v) for v in os.environ.get("SHAPE", "1,8,32768,128").split(","))
CALLS = int(os.environ.get("CALLS", "3"))
torch.manual_seed(process)
q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # warm-up, not profiled
    torch.cuda.synchronize()
    for causal, calls in ((True, CALLS), (False, 1)):
        for call in range(calls):
            torch.cuda.profiler.start()
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            print(f"PROBE {process} {call} {int(causal)}", flush=True)
if process == 1:
    del q, k, v, pad
    torch.cuda.empty_cache()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sm_sides  # noqa: E402

    sm_sides.sm_sides(ctypes.CDLL(sys.argv[1]))
