# When each thread block of a PyTorch attention kernel ends, on a green context of SMS SMs (default 128):
# block_end_spy.cu's spy runs on the SMs that context leaves and records %globaltimer when each block's
# output tile (the memory-efficient backward's dK_j, FlashAttention-2's forward O_i) changes from the 0xFF it
# was filled with. Do the GPU's waves stay as clean as the model's (docs/validation.md, "The memory-efficient
# backward on fewer SMs")? No profiler: clocks as the card runs them; the L2 is evicted by a 512 MiB read
# before every launch. The output's address is learnt from a warm-up call (the caching allocator hands the
# same blocks to the same sequence of requests); a launch whose output moved is marked and its times dropped.
#   python3 validation/block_times_probe.py PROBE_SO ENDS_CSV LAUNCHES_CSV
# CASES: kind,b,h,n,d,causal with kind memeff_bwd (torch.ops.aten._efficient_attention_backward, as
# memeff_sms_probe.py calls it), fa2_fwd, memeff_fwd or cudnn_fwd (scaled_dot_product_attention under
# FLASH_ATTENTION, EFFICIENT_ATTENTION or CUDNN_ATTENTION, as sdpa_measure.py calls it). Block index = x + X
# (y + Y z), CUDA's launch order. cuDNN's forward is persistent (a block per SM looping over work tiles): its
# "blocks" here are 64-row tiles of O, x the query tile, y the head, z the batch, and their end times give
# the order in which its blocks took the tiles.
import ctypes
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import green_context

lib = ctypes.CDLL(sys.argv[1])
for name, args in {"spy_open": [ctypes.c_int], "spy_wait": [],
                   "spy_launch": [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong],
                   "stamp_on": [ctypes.c_void_p, ctypes.c_void_p],
                   "fill_bytes": [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t],
                   "launch_smids": [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]}.items():
    getattr(lib, name).argtypes = args
CASES = os.environ.get("CASES", "memeff_bwd,1,16,8192,128,0 memeff_bwd,1,16,8192,128,1 memeff_bwd,8,32,2048,128,0 "
                       "memeff_bwd,1,8,32768,128,0 memeff_bwd,1,16,16384,64,0 fa2_fwd,1,8,32768,128,1 "
                       "fa2_fwd,1,8,32768,128,0")
SMS = int(os.environ.get("SMS", "128"))
REPS = int(os.environ.get("REPS", "2"))
op_f = torch.ops.aten._efficient_attention_forward
op_b = torch.ops.aten._efficient_attention_backward
props = torch.cuda.get_device_properties(0)


def tile_index(kind, b, h, n, d):
    """(tensor dim order, rows per block, grid X, Y, Z) and the tile origin of block (x, y, z)."""
    if kind == "memeff_bwd":  # grid (key blocks, heads, batch); dK (b, n, h, d)
        rows = 128 if d == 128 else 64
        grid = (-(-n // rows), h, b)
        return grid, lambda x, y, z: (z, x * rows, y, 0)
    if kind in ("memeff_fwd", "cudnn_fwd"):  # grid (query blocks of 64 rows, heads, batch); O (b, h, n, d)
        grid = (-(-n // 64), h, b)
        return grid, lambda x, y, z: (z, y, x * 64, 0)
    rows = 128  # FlashAttention-2 forward, d = 128: grid (query blocks, batch, heads); O (b, h, n, d)
    grid = (-(-n // rows), b, h)
    return grid, lambda x, y, z: (y, z, x * rows, 0)


def tile_addresses(t, grid, origin):
    X, Y, Z = grid
    out = []
    for z in range(Z):
        for y in range(Y):
            for x in range(X):
                idx = origin(x, y, z)
                out.append(t.data_ptr() + 2 * sum(i * s for i, s in zip(idx, t.stride())))
    return out


def smids(blocks):
    return green_context.smids(lib, blocks)


def case_call(kind, b, h, n, d, causal):
    """A function that launches the kernel and returns the watched output (and keeps what it must)."""
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(3))
    if kind == "memeff_bwd":
        do = torch.randn(b, n, h, d, device="cuda", dtype=torch.float16)
        out, lse, seed, off = op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)[:4]

        def call():
            return op_b(do, q, k, v, None, out, None, None, n, n, lse, 0.0, seed, off, causal, False)[1]
        return call
    qq, kk, vv = (t.transpose(1, 2) for t in (q, k, v))  # (b, h, n, d) views, as sdpa_measure.py's
    backend = {"fa2_fwd": SDPBackend.FLASH_ATTENTION, "memeff_fwd": SDPBackend.EFFICIENT_ATTENTION,
               "cudnn_fwd": SDPBackend.CUDNN_ATTENTION}[kind]

    def call():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qq, kk, vv, is_causal=bool(causal))
    return call


def main(ends_path, launches_path):
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")  # the primary context first, as the tensors live there
    ctx = green_context.create(SMS)
    spare = lib.spy_open(SMS)
    assert spare > 0, f"spy_open: {spare}"
    evict = torch.ones(256 << 20, device="cuda", dtype=torch.float16)  # 512 MiB
    evict_sum = torch.zeros((), device="cuda", dtype=torch.float32)
    stamps = torch.zeros(2, device="cuda", dtype=torch.int64)
    info = torch.zeros(8, device="cuda", dtype=torch.int64)
    ends = open(ends_path, "w")
    launches = open(launches_path, "w")
    ends.write("case,rep,block,x,y,z,end_ns\n")
    launches.write("case,kind,batch,heads,n,d,causal,sms,spy_sms,rep,blocks,valid,kernel_span_ns,spy_sm,"
                   "spy_sweeps,never_changed,changed_at_first_sweep,spy_clock_ghz,sm_ids\n")
    for spec in CASES.split():
        kind, *dims = spec.split(",")
        b, h, n, d, causal = (int(x) for x in dims)
        name = f"{kind}_{b}x{h}x{n}x{d}_c{causal}"
        call = case_call(kind, b, h, n, d, causal)
        grid, origin = tile_index(kind, b, h, n, d)
        ctx.set_context()
        used = smids(4 * props.multi_processor_count)
        stream = torch.cuda.current_stream().cuda_stream
        # Load stamp's module in this context before the spy runs: a module load waits for the device's
        # other work, and the first launch would wait for the spy to time out.
        assert lib.stamp_on(stream, stamps.data_ptr()) == 0
        torch.cuda.synchronize()
        ptrs = []
        for _ in range(2):  # warm-up: the address the allocator gives the output
            t = call()
            torch.cuda.synchronize()
            ptrs.append((t.data_ptr(), tuple(t.stride())))
            addresses = tile_addresses(t, grid, origin)
            span = t.untyped_storage().nbytes()
            del t
        tiles = torch.tensor(addresses, dtype=torch.int64, device="cuda")
        blocks = len(addresses)
        for rep in range(REPS):
            end_ns = torch.zeros(blocks, device="cuda", dtype=torch.int64)
            torch.sum(evict, dim=0, dtype=torch.float32, out=evict_sum)
            assert lib.fill_bytes(ptrs[-1][0], 0xFF, span) == 0
            torch.cuda.synchronize()
            assert lib.spy_launch(tiles.data_ptr(), blocks, end_ns.data_ptr(), info.data_ptr(), 5_000_000_000) == 0
            assert lib.stamp_on(stream, stamps[0:].data_ptr()) == 0
            t = call()
            assert lib.stamp_on(stream, stamps[1:].data_ptr()) == 0
            torch.cuda.synchronize()
            assert lib.spy_wait() == 0
            valid = (t.data_ptr(), tuple(t.stride())) == ptrs[-1] and ptrs[0] == ptrs[-1]
            del t
            s0, s1 = stamps.tolist()
            spy = info.tolist()
            ghz = (spy[7] - spy[6]) / max(1, spy[1] - spy[0])
            launches.write(f"{name},{kind},{b},{h},{n},{d},{causal},{SMS},{spare},{rep},{blocks},{int(valid)},"
                           f"{s1 - s0},{spy[3]},{spy[2]},{spy[4]},{spy[5]},{ghz:.4f},{' '.join(map(str, used))}\n")
            if valid:
                X, Y, _ = grid
                for i, e in enumerate(end_ns.tolist()):
                    ends.write(f"{name},{rep},{i},{i % X},{i // X % Y},{i // (X * Y)},{e - s0 if e else ''}\n")
            ends.flush()
            launches.flush()
            print(f"BLOCKS {name} rep {rep}: {blocks} blocks, valid {int(valid)}, span {(s1 - s0) / 1e6:.3f} ms, "
                  f"spy SM {spy[3]} sweeps {spy[2]} never {spy[4]} early {spy[5]} clock {ghz:.3f} GHz", flush=True)
        ctx.pop_context()
        del call
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[2], sys.argv[3])
