# One launch each of SDPA's cuDNN, memory-efficient and FlashAttention-2 forwards at B x H x N x D (env SHAPE,
# default 1,8,32768,128), inside a profiler range, so that run_sass_hints.sh can have Nsight Compute keep each
# kernel's SASS: do their global loads and stores carry L2 eviction hints (evict_first / evict_last)?
import os
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

b, h, n, d = (int(x) for x in os.environ.get("SHAPE", "1,8,32768,128").split(","))
q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
torch.cuda.synchronize()
for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.FLASH_ATTENTION):
    with sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v)  # warm-up: plans and modules outside the range
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    with sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("PROBE", backend.name, flush=True)
