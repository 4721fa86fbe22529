# How much do the memory-efficient backward's DRAM bytes vary from launch to launch? The same case five times
# through SDPA (as validation/sdpa_measure.py profiles it) and five times through the op SDPA calls, each
# launch profiled (run under ncu --profile-from-start off --cache-control all: the L2 flushed before each).
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.manual_seed(0)
for (b, h, n, d) in [(1, 4, 8192, 128), (1, 2, 16384, 128)]:
    for causal in (False, True):
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3))
        do = torch.randn(b, h, n, d, device="cuda", dtype=torch.float16)
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            for rep in range(7):
                if rep >= 2:
                    torch.cuda.synchronize()
                    torch.cuda.profiler.start()
                torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
                if rep >= 2:
                    torch.cuda.synchronize()
                    torch.cuda.profiler.stop()
        print(f"case {b}x{h}x{n}x{d} causal={int(causal)}: 5 launches", flush=True)
