# What the L2 still holds, tensor by tensor, when PyTorch's memory-efficient backward kernel ends. For each
# case and each tensor the backward (torch.ops.aten._efficient_attention_backward, as SDPA calls it, after a
# 512 MiB read that evicts everything else) runs once, then residency_read (memeff_residency_read.cu, loaded
# through ctypes) reads every STRIDE-th line of that one tensor (about 1 MiB of it); run under ncu
# --cache-control none --profile-from-start off -k regex:residency_read, that read's DRAM bytes over the bytes
# it read are the share of the tensor's lines no longer in L2. The f32 dQ workspace and D (delta), which the
# call allocates and frees, are found in PyTorch's allocator history of the call just before each read, by
# size. Lines: "PROBE case target address bytes stride" in the order ncu profiles the reads. SMS=S runs the
# backward in a CUDA green context of S SMs, so that fewer heads run at a time (cases named ..._sS); the reads
# of tensors run on every SM, and local memory is not read (ncu failed to profile the local kernels in the
# context).
import ctypes, os, sys
import torch

import green_context

lib = ctypes.CDLL(sys.argv[1])
lib.launch_residency_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
lib.launch_local.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
op_f = torch.ops.aten._efficient_attention_forward
op_b = torch.ops.aten._efficient_attention_backward
# Tensors below 4 MiB are read whole. STRIDE=auto (the default) reads about 1 MiB of each larger one: the
# read's own misses fill the L2 and push out what it has yet to look at, so every 5th line of a 268 MB
# workspace (54 MB, twice that with the far partition's copies) finds nothing of it even where the kernel
# left its last heads' lines. The stride is odd: O, dO and the gradients are (b, n, h, d), so a head's lines
# recur every 2h lines and a power-of-two stride would read some heads only (every 4th line reads the even
# heads of 8 or 16). STRIDE=N reads every Nth line (5 until the seventieth session).
STRIDE = os.environ.get("STRIDE", "auto")
READ_BUDGET = 1 << 20


def stride_for(nbytes):
    if nbytes < (4 << 20):
        return 1
    if STRIDE != "auto":
        return int(STRIDE)
    stride = max(5, -(-nbytes // READ_BUDGET))
    return stride if stride % 2 else stride + 1


CASES = os.environ.get("CASES", " ".join([f"1,{h},8192,128,0" for h in (1, 2, 4, 8, 16)] + [
    "1,16,8192,128,1", "1,1,16384,128,0", "1,8,32768,128,0", "1,8,32768,128,1", "8,32,2048,128,0", "8,32,2048,128,1"]))
# The forward kernel (fmha_cutlassF) as a check of the method where the model's DRAM reads agree with the GPU's.
FWD_CASES = os.environ.get("FWD_CASES", "1,16,8192,128,0 1,16,8192,128,1 1,8,32768,128,0")
sink = torch.zeros(4, dtype=torch.int32, device="cuda")
junk = torch.ones(512 << 20, dtype=torch.uint8, device="cuda")


def allocations_during(fn):
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=1 << 20)
    out = fn()
    torch.cuda.synchronize()
    trace = torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()]
    torch.cuda.memory._record_memory_history(enabled=None)
    return out, [(e["addr"], e["size"]) for e in trace if e["action"] == "alloc"]


def evict():  # reads the 512 MiB junk buffer: what earlier calls left leaves the L2 (no allocation)
    assert lib.launch_residency_read(junk.data_ptr(), junk.numel(), 1, sink.data_ptr()) == 0


SMS = torch.cuda.get_device_properties(0).multi_processor_count
SUBSET = int(os.environ.get("SMS", "0"))
if SUBSET:
    GREEN = green_context.create(SUBSET)


def in_subset(fn):  # runs fn in the green context, if any
    if not SUBSET:
        return fn()
    GREEN.set_context()
    try:
        return fn()
    finally:
        GREEN.pop_context()
FRAME = 34 * 4 * 512  # bytes of local memory a 512-thread block of the local kernels reads
ONE_PER_SM, FOUR_PER_SM = 150 << 10, 0  # dynamic shared memory: one block of 512 threads per SM, or four


def read_local(label, smem):  # profiles the local read; PROBE line as for a tensor, its bytes the frames'
    blocks = SMS if smem else 4 * SMS
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    rc = lib.launch_local(0, blocks, smem, sink.data_ptr())
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    assert rc == 0, rc
    return f"{label} 0x0 {blocks * FRAME} 1"


def read(addr, nbytes, stride):
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    rc = lib.launch_residency_read(addr, nbytes, stride, sink.data_ptr())
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    assert rc == 0, rc


torch.manual_seed(0)
# Controls: a 16 MiB tensor read by a reduction just before (expected to stay), and read twice in a row by the
# residency read (the second finds what the first brought in, unless profiling the first disturbed the L2).
x = torch.randn(4 << 20, device="cuda")
# Then x only written (fill_: lines allocated by stores, never read), and written then read by a reduction.
for label in ("after_sum", "first_read", "second_read", "after_fill", "after_fill_sum"):
    if label in ("after_sum", "after_fill", "after_fill_sum"):
        evict()
    if label in ("after_fill", "after_fill_sum"):
        x.fill_(1.0)
    if label in ("after_sum", "after_fill_sum"):
        x.sum()
    stride = stride_for(x.untyped_storage().nbytes())
    read(x.data_ptr(), x.untyped_storage().nbytes(), stride)
    print(f"PROBE control x_{label} {x.data_ptr():#x} {x.untyped_storage().nbytes()} {stride}", flush=True)
# Local memory: frames written by one block per SM, read back by one block per SM (the same slots) and by four
# (every warp slot of the SM).
LOCAL_READS = () if SUBSET else (("local_one_per_sm", ONE_PER_SM), ("local_four_per_sm", FOUR_PER_SM))
for label, smem in LOCAL_READS:
    evict()
    assert lib.launch_local(1, SMS, ONE_PER_SM, sink.data_ptr()) == 0
    print(f"PROBE control {read_local(label, smem)}", flush=True)
for spec in CASES.split():
    b, h, n, d, causal = (int(x) for x in spec.split(","))
    name = f"{b}x{h}x{n}x{d}_c{causal}" + (f"_s{SUBSET}" if SUBSET else "")
    # Q, K, V as SDPA passes them (b, h, n, d) storage seen as (b, n, h, d); O from the forward; dO made
    # contiguous (b, n, h, d) as SDPA's copy before the kernel does.
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(3))
    do = torch.randn(b, n, h, d, device="cuda", dtype=torch.float16)
    out, lse, seed, off = op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)[:4]

    def backward():
        evict()
        return in_subset(lambda: op_b(do, q, k, v, None, out, None, None, n, n, lse, 0.0, seed, off, causal, False))

    def output_storages(grads):  # dQ, dK, dV: (address, bytes) of their storages (one, if they share it)
        storages = [(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()) for t in grads[:3]]
        return storages if len(set(storages)) == 3 else storages[:1]

    def call():  # one backward: its outputs' storages and the blocks it allocated and freed (by size)
        grads, allocs = allocations_during(backward)
        outputs = output_storages(grads)
        temps = sorted(((s, a) for a, s in allocs if a not in dict(outputs)), reverse=True)
        workspace = min(temps, key=lambda x: abs(x[0] - b * h * n * d * 4))  # f32, plus its locks
        return grads, outputs, temps, workspace

    grads, outputs, temps, workspace = call()
    print(f"case {name} outputs {[(hex(a), s) for a, s in outputs]} freed {[(hex(a), s) for s, a in temps]}",
          flush=True)
    targets = [("Q", q.untyped_storage().data_ptr(), q.untyped_storage().nbytes()),
               ("K", k.untyped_storage().data_ptr(), k.untyped_storage().nbytes()),
               ("V", v.untyped_storage().data_ptr(), v.untyped_storage().nbytes()),
               ("O", out.data_ptr(), out.untyped_storage().nbytes()),
               ("dO", do.data_ptr(), do.untyped_storage().nbytes()),
               ("L", lse.data_ptr(), lse.untyped_storage().nbytes()),
               ("dQaccum", None, workspace[0])]
    targets += [(f"grads{i}" if len(outputs) == 1 else ("dQ", "dK", "dV")[i], None, s)
                for i, (a, s) in enumerate(outputs)]
    targets += [("D" if s == b * h * n * 4 else f"temp_{s}", None, s) for s, a in temps
                if s >= 4096 and (s, a) != workspace]
    targets.append(("junk_head", junk.data_ptr(), 64 << 20))
    targets.append(("junk_tail", junk.data_ptr() + junk.numel() - (64 << 20), 64 << 20))
    targets.append(("Q_again", q.untyped_storage().data_ptr(), q.untyped_storage().nbytes()))
    for label, addr, nbytes in targets:
        # Each read follows a call of its own and reads that call's blocks (the allocator may place them
        # elsewhere from call to call while the previous call's outputs are still held).
        grads, outputs, temps, workspace = call()
        if label in ("dQ", "dK", "dV", "grads0"):
            addr = outputs[("dQ", "dK", "dV", "grads0").index(label) % 3][0]
        elif label == "dQaccum":
            addr = workspace[1]
        elif label == "D" or label.startswith("temp_"):
            addr = next(a for s, a in temps if s == nbytes and (s, a) != workspace)
        stride = stride_for(nbytes)
        read(addr, nbytes, stride)
        print(f"PROBE {name} {label} {addr:#x} {nbytes} {stride}", flush=True)
    for label, smem in LOCAL_READS:
        call()
        print(f"PROBE {name} {read_local(label, smem)}", flush=True)
    del q, k, v, do, out, lse, grads
    torch.cuda.empty_cache()

for spec in FWD_CASES.split():
    b, h, n, d, causal = (int(x) for x in spec.split(","))
    name = f"fwd_{b}x{h}x{n}x{d}_c{causal}"
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(3))

    def forward():
        evict()
        return op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)

    for label in ("Q", "K", "V", "O", "L"):
        res, _ = allocations_during(forward)
        t = {"Q": q, "K": k, "V": v, "O": res[0], "L": res[1]}[label]
        addr, nbytes = t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
        stride = stride_for(nbytes)
        read(addr, nbytes, stride)
        print(f"PROBE {name} {label} {addr:#x} {nbytes} {stride}", flush=True)
    del q, k, v, res
    torch.cuda.empty_cache()
