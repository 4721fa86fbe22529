# Does an H200's L2 keep lines that a kernel only wrote as it keeps lines it read? A buffer W (8 MiB) is
# written by fill_ (or, as the control, read) between two read-only streams, S1 (16 MiB) before it and S2
# (8 to 40 MiB) after it, each read once by residency_read (memeff_residency_read.cu) outside the profiled
# range; then either W or S1 is read under ncu (--cache-control none, DRAM bytes only), every 4th line. Under
# LRU, S1 (older) loses lines before W; if written lines are filled at low priority, W loses them first.
# Each probe follows a fresh sequence. Lines: "PROBE case target address bytes stride".
# Run by validation/run_memeff_residency.sh with PROBE_SCRIPT=validation/l2_write_priority_probe.py.
import ctypes, sys
import torch

lib = ctypes.CDLL(sys.argv[1])
lib.launch_residency_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
sink = torch.zeros(4, dtype=torch.int32, device="cuda")
junk = torch.ones(512 << 20, dtype=torch.uint8, device="cuda")
MiB = 1 << 20
s1 = torch.ones(16 * MiB, dtype=torch.uint8, device="cuda")
w = torch.ones(8 * MiB, dtype=torch.uint8, device="cuda")
s2 = torch.ones(40 * MiB, dtype=torch.uint8, device="cuda")


def stream(t, nbytes):  # one read of every line, not profiled
    assert lib.launch_residency_read(t.data_ptr(), nbytes, 1, sink.data_ptr()) == 0


def probe(t, nbytes):
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    assert lib.launch_residency_read(t.data_ptr(), nbytes, 4, sink.data_ptr()) == 0
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


for s2_mib in (8, 16, 24, 32, 40):
    for w_by in ("write", "read"):
        for target, t in (("W", w), ("S1", s1)):
            stream(junk, junk.numel())
            stream(s1, s1.numel())
            if w_by == "write":
                w.fill_(2)
            else:
                stream(w, w.numel())
            stream(s2, s2_mib * MiB)
            probe(t, t.numel())
            print(f"PROBE s2_{s2_mib}MiB_w_{w_by} {target} {t.data_ptr():#x} {t.numel()} 4", flush=True)
