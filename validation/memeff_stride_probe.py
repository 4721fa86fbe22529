# Does the memory-efficient backward's DRAM traffic depend on where each head's rows lie? PyTorch's SDPA hands
# the kernel Q, K, V as (b, n, h, d) views of (b, h, n, d) tensors (a head's rows contiguous, heads 2 MB apart
# at n = 8,192, d = 128) and O, dO as (b, n, h, d) contiguous tensors (heads interleaved row by row). Here the
# kernel (torch.ops.aten._efficient_attention_backward, as SDPA calls it) runs with Q, K, V's heads `pad` rows
# apart beyond n, so that a power-of-two head stride can be told from the bytes it costs. One profiled launch
# per case after two warm-ups (run under ncu --profile-from-start off).
import torch

torch.manual_seed(0)
op_f = torch.ops.aten._efficient_attention_forward
op_b = torch.ops.aten._efficient_attention_backward
for (b, h, n, d) in [(1, 4, 8192, 128), (1, 16, 8192, 128)]:
    for causal in (0, 1):
        for pad in (0, 1, 64):
            q, k, v = (torch.randn(b, h, n + pad, d, device="cuda", dtype=torch.float16)[:, :, :n].transpose(1, 2)
                       for _ in range(3))
            do = torch.randn(b, n, h, d, device="cuda", dtype=torch.float16)
            res = op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)
            out, lse, seed, off = res[0], res[1], res[2], res[3]
            for rep in range(3):
                if rep == 2:
                    torch.cuda.synchronize()
                    torch.cuda.profiler.start()
                op_b(do, q, k, v, None, out, None, None, n, n, lse, 0.0, seed, off, causal, False)
                if rep == 2:
                    torch.cuda.synchronize()
                    torch.cuda.profiler.stop()
            print(f"case {b}x{h}x{n}x{d} causal={causal} pad={pad} strides q {tuple(q.stride())} o {tuple(out.stride())}",
                  flush=True)
