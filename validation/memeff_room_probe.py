# How much L2 room one wave of PyTorch's memory-efficient backward takes, measured by what it pushes out of a
# hot part read just before it. Each trial: a 512 MiB read that evicts everything, a hot buffer of R MiB read
# once by every SM (residency_read of memeff_residency_read.cu, loaded through ctypes), then the backward
# (torch.ops.aten._efficient_attention_backward, as SDPA calls it) or nothing or a plain read of X MiB, then
# the hot buffer read again; run under ncu --cache-control none --profile-from-start off -k regex:residency
# with DRAM bytes as the only metric, only that last read is profiled: its DRAM bytes over R are the share of
# the hot buffer the kernel pushed out. Under LRU the hot buffer, older than every line of the kernel, goes
# first: it starts to go where R's room and the kernel's no longer fit a partition. Lines: "PROBE case R_MiB
# between" in the order ncu profiles the reads. CASES (b,h,n,d,causal ...), HOT_MIB and PLAIN_MIB choose.
import ctypes, os, sys
import torch

import sm_sides

lib = ctypes.CDLL(sys.argv[1])
lib.launch_residency_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
op_f = torch.ops.aten._efficient_attention_forward
op_b = torch.ops.aten._efficient_attention_backward
# One wave each (128 blocks of 128 or 64 keys on 132 SMs): d = 128 spills registers (136 bytes of stack a
# thread), d = 64 does not.
CASES = os.environ.get("CASES", "1,2,4096,128,0 1,1,8192,128,0 1,1,8192,64,0")
HOT_MIB = [int(r) for r in os.environ.get("HOT_MIB", "8 12 14 16 18 20 22 24 28 32 36 40").split()]
PLAIN_MIB = [int(x) for x in os.environ.get("PLAIN_MIB", "8 16 24").split()]
sink = torch.zeros(4, dtype=torch.int32, device="cuda")
junk = torch.ones(512 << 20, dtype=torch.uint8, device="cuda")
hot = torch.ones(max(HOT_MIB) << 20, dtype=torch.uint8, device="cuda")
plain = torch.ones(max(PLAIN_MIB + [1]) << 20, dtype=torch.uint8, device="cuda")


def read_at(addr, nbytes):
    assert lib.launch_residency_read(addr, nbytes, 1, sink.data_ptr()) == 0


def read_all(t, nbytes):
    read_at(t.data_ptr(), nbytes)


def trial(name, r_mib, between, reread="all", hot_buffer=None, hot_read=None):
    """The re-read: all of the hot buffer, or every 5th line of its first or second half. PROBE name R_MiB
    reread bytes_read. hot_read: the first read of the hot buffer, if not by every SM."""
    buffer = hot if hot_buffer is None else hot_buffer
    read_all(junk, junk.numel())
    if hot_read:
        hot_read()
    else:
        read_all(buffer, r_mib << 20)
    between()
    half = (r_mib << 20) // 2
    start, nbytes, stride = {"all": (0, r_mib << 20, 1), "first_half": (0, half, 5),
                             "second_half": (half, half, 5)}[reread]
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    assert lib.launch_residency_read(buffer.data_ptr() + start, nbytes, stride, sink.data_ptr()) == 0
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"PROBE {name} {r_mib} {reread} {(nbytes // 128 + stride - 1) // stride * 128}", flush=True)


def placement_trials():
    """ROOM_SET=placement: where the plain buffer lies and which of the hot buffer's lines go. The plain read
    comes from the junk buffer at four offsets (other pages), or right after the hot buffer in one allocation;
    and the hot buffer's first and second halves (in the order its first read took them) are read back
    sampled, every 5th line (few fills, so the read back evicts little of what it measures), each in a
    trial of its own: under LRU the first half goes first."""
    both = torch.ones(64 << 20, dtype=torch.uint8, device="cuda")
    for x, r in ((16, 24), (24, 16), (8, 32)):
        for offset in (0, 128, 256, 384):
            plain_at = junk.data_ptr() + (offset << 20)
            trial(f"plain_{x}MiB_junk{offset}", r, lambda: read_at(plain_at, x << 20))
        trial(f"plain_{x}MiB_after_hot", r, lambda: read_at(both.data_ptr() + (r << 20), x << 20),
              hot_buffer=both)
        for half in ("first_half", "second_half"):
            trial(f"plain_{x}MiB", r, lambda: read_all(plain, x << 20), reread=half)
    for r in (36, 40):
        for half in ("first_half", "second_half"):
            trial("nothing", r, lambda: None, reread=half)


def copies_trials():
    """ROOM_SET=copies: the plain read by one SM (one block) or by 8 blocks instead of every SM, so that its
    far lines' copies all land in one partition (or a few SMs'): whether the plain buffer's copies are what
    takes the older buffer's room. The whole hot buffer and its first half's sample read back."""
    lib.launch_residency_read_blocks.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                                 ctypes.c_void_p]

    def plain_by(blocks, x):
        assert lib.launch_residency_read_blocks(plain.data_ptr(), x << 20, 1, blocks, sink.data_ptr()) == 0

    for blocks in (1, 8):
        for x, r in ((16, 24), (24, 16), (8, 32), (16, 20), (24, 12)):
            for reread in ("all", "first_half"):
                trial(f"plain_{x}MiB_by{blocks}", r, lambda: plain_by(blocks, x), reread=reread)


def sides_trials():
    """ROOM_SET=sides: the hot buffer read by 8 blocks (a run of SMs of one partition: CUDA's first blocks)
    and the plain by every SM, or both by 8 blocks: which partition's pressure costs the hot buffer its
    lines. The first half's sample read back by every SM."""
    lib.launch_residency_read_blocks.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                                 ctypes.c_void_p]

    def by(blocks, t, nbytes):
        assert lib.launch_residency_read_blocks(t.data_ptr(), nbytes, 1, blocks, sink.data_ptr()) == 0

    for hot_blocks, plain_blocks in ((8, 264), (8, 8)):
        for x, r in ((16, 24), (24, 16), (8, 20), (16, 12), (24, 8)):
            trial(f"plain_{x}MiB_by{plain_blocks}_hot_by{hot_blocks}", r, lambda: by(plain_blocks, plain, x << 20),
                  reread="first_half", hot_read=lambda: by(hot_blocks, hot, r << 20))


def partitions_trials():
    """ROOM_SET=partitions: the hot buffer read by the SMs of one L2 partition (A: SM 0's, B: the other's)
    or by every SM, then the plain buffer by A, B or every SM (masked_read: only blocks on the chosen SMs
    read, taking lines in order from a counter), then the hot buffer's first half sampled back by every SM:
    which side's lines and copies cost the hot buffer its room. Also the hot buffer alone, read by one side."""
    lib.launch_masked_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_int, ctypes.c_void_p]
    same, other, sms = sm_sides.sm_sides(lib)
    counter = torch.zeros(1, dtype=torch.int64, device="cuda")

    def mask_of(ids):
        words = [0] * 8
        for i in ids:
            words[i // 32] |= 1 << (i % 32)
        return torch.tensor([w - (1 << 32) if w >= 1 << 31 else w for w in words], dtype=torch.int32,
                            device="cuda")

    masks = {"A": mask_of(same), "B": mask_of(other), "all": mask_of(range(sms))}

    def by(side, t, nbytes, take=1):
        assert lib.launch_masked_read(t.data_ptr(), nbytes, masks[side].data_ptr(), counter.data_ptr(), take,
                                      sink.data_ptr()) == 0

    sizes = ((16, 24), (24, 16), (8, 32), (16, 20), (24, 12))
    if os.environ.get("PART_SET") == "takes":
        takes_trials(by, sizes)
        return
    for hot_by, plain_by in (("all", "all"), ("all", "A"), ("all", "B"), ("A", "A"), ("A", "B"), ("B", "B"),
                             ("B", "A"), ("A", "all"), ("B", "all")):
        for x, r in sizes:
            trial(f"plain_{x}MiB_by{plain_by}_hot_by{hot_by}", r, lambda: by(plain_by, plain, x << 20),
                  reread="first_half", hot_read=lambda: by(hot_by, hot, r << 20))
    for hot_by in ("A", "B"):
        for r in (16, 20, 24, 28, 32):
            trial(f"nothing_hot_by{hot_by}", r, lambda: None, reread="first_half",
                  hot_read=lambda: by(hot_by, hot, r << 20))


def takes_trials(by, sizes):
    """PART_SET=takes: both buffers read by every SM, a line a warp (take 1), or in 16 KiB runs each read by
    one SM (take 128: a line and the lines near it then always have readers on the same side), twice each,
    after a warm-up trial (the first profiled read of a process has read high: 0.77 against 0.30 and less);
    and one side's reads in runs, to compare."""
    trial("warmup", 24, lambda: by("all", plain, 16 << 20), reread="first_half",
          hot_read=lambda: by("all", hot, 24 << 20))
    for rep in (1, 2):
        for take in (1, 128):
            for x, r in sizes:
                trial(f"plain_{x}MiB_byall_hot_byall_take{take}_r{rep}", r,
                      lambda: by("all", plain, x << 20, take), reread="first_half",
                      hot_read=lambda: by("all", hot, r << 20, take))
    for x, r in sizes:
        trial(f"plain_{x}MiB_byA_hot_byA_take128", r, lambda: by("A", plain, x << 20, 128),
              reread="first_half", hot_read=lambda: by("A", hot, r << 20, 128))
    for x, r in sizes:
        trial(f"plain_{x}MiB_byall_hot_byall_gridstride", r, lambda: read_all(plain, x << 20),
              reread="first_half")


torch.manual_seed(0)
if os.environ.get("ROOM_SET") == "partitions":
    partitions_trials()
    sys.exit(0)
if os.environ.get("ROOM_SET") == "sides":
    sides_trials()
    sys.exit(0)
if os.environ.get("ROOM_SET") == "placement":
    placement_trials()
    sys.exit(0)
if os.environ.get("ROOM_SET") == "copies":
    copies_trials()
    sys.exit(0)
for r in HOT_MIB:
    trial("nothing", r, lambda: None)
for x in PLAIN_MIB:
    for r in HOT_MIB:
        trial(f"plain_{x}MiB", r, lambda: read_all(plain, x << 20))
for spec in CASES.split():
    b, h, n, d, causal = (int(v) for v in spec.split(","))
    # Q, K, V as SDPA passes them (b, h, n, d) storage seen as (b, n, h, d); O from the forward; dO
    # contiguous (b, n, h, d) as SDPA's copy before the kernel makes it.
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(3))
    do = torch.randn(b, n, h, d, device="cuda", dtype=torch.float16)
    out, lse, seed, off = op_f(q, k, v, None, None, None, n, n, 0.0, causal, True)[:4]
    for r in HOT_MIB:
        trial(f"bwd_{b}x{h}x{n}x{d}_c{causal}", r,
              lambda: op_b(do, q, k, v, None, out, None, None, n, n, lse, 0.0, seed, off, causal, False))
    del q, k, v, do, out, lse
    torch.cuda.empty_cache()
