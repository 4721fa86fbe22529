# Does FlashAttention-2's causal forward read more DRAM bytes when its K and V pages fill the L2's sets
# unevenly? One process per placement (PAD_MIB held first, as sdpa_measure.py does): Q, K, V for
# 1 x 8 x 32,768 x 128 (f16, (b, h, n, d)), SDPA's flash backend runs the causal forward once, then
# windows_read (windows_read.cu, through ctypes) reads, with one SM and three passes, for each head h < 7
# the pages that head's blocks share the L2 with: K_h and V_h whole and the first 6 MiB of K_{h+1} and
# V_{h+1} (28 MiB), and the same for K alone: K from h * 8 MiB on, 28 MiB contiguous. Run under ncu (the
# default --cache-control all flushes L2 before each kernel), the probe reads' DRAM bytes over 28 MiB say
# how evenly those physical pages fill the sets. Lines "PROBE pad kind head k_addr v_addr" in ncu's order
# (the flash kernel is "PROBE pad fa2 -1 ..."; FA2_REPEATS=R runs it R times, "fa2 -1" to "fa2 -R", before
# the probes). PROBE_SMS="0 4": each window read by SM 0 and by SM 4 instead (kinds kv_sm0, k_sm4, ...): one
# SM sees only its own partition's sets, and SMs 0 and 4 sit on different partitions.
import ctypes, os, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

MIB = 1 << 20
lib = ctypes.CDLL(sys.argv[1])
U64 = ctypes.c_ulonglong
lib.launch_windows_read.argtypes = [ctypes.POINTER(U64), ctypes.POINTER(U64), ctypes.c_int, ctypes.c_int,
                                    ctypes.c_void_p]
lib.launch_windows_read_on.argtypes = [ctypes.POINTER(U64), ctypes.POINTER(U64), ctypes.c_int, ctypes.c_int,
                                       ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
probe_sms = [int(s) for s in os.environ.get("PROBE_SMS", "").split()]
sms = torch.cuda.get_device_properties(0).multi_processor_count
pad_mib = int(os.environ.get("PAD_MIB", "0"))
pad = torch.empty(pad_mib * MIB, dtype=torch.uint8, device="cuda")  # noqa: F841 (held to the end)
b, h, n, d = 1, 8, 32768, 128
gen = torch.Generator(device="cuda")
gen.manual_seed(20240607)
q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
sink = torch.zeros(4, dtype=torch.int32, device="cuda")
head = n * d * 2
torch.cuda.synchronize()


def read(windows, sm=None):
    bases = (U64 * len(windows))(*[w[0] for w in windows])
    sizes = (U64 * len(windows))(*[w[1] for w in windows])
    if sm is None:
        assert lib.launch_windows_read(bases, sizes, len(windows), 3, sink.data_ptr()) == 0
    else:
        sink.zero_()
        assert lib.launch_windows_read_on(bases, sizes, len(windows), 3, sm, 2 * sms, sink.data_ptr()) == 0
    torch.cuda.synchronize()
    if sm is not None:
        assert sink[1].item() == 1 + sm, f"no block landed on SM {sm}"


def probe(kind, hh, a, b_, c, windows):
    for sm in probe_sms or [None]:
        label = kind if sm is None else f"{kind}_sm{sm}"
        print(f"PROBE {pad_mib} {label} {hh} {a} {b_} {c}", flush=True)
        read(windows, sm)


torch.cuda.profiler.start()
for r in range(int(os.environ.get("FA2_REPEATS", "1"))):  # the same pages again: the launches' own spread
    print(f"PROBE {pad_mib} fa2 {-1 - r} {k.data_ptr()} {v.data_ptr()} {q.data_ptr()}", flush=True)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.cuda.synchronize()
for hh in range(h - 1):
    kb, vb = k.data_ptr() + hh * head, v.data_ptr() + hh * head
    probe("kv", hh, kb, vb, o.data_ptr(), [(kb, head), (vb, head), (kb + head, 6 * MIB), (vb + head, 6 * MIB)])
for hh in range(0, h - 3):
    kb = k.data_ptr() + hh * head
    probe("k", hh, kb, 0, 0, [(kb, 28 * MIB)])
torch.cuda.profiler.stop()
