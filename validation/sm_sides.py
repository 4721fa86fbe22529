# Which SMs share SM 0's L2 partition, by time, with no profiler (memeff_room_probe.py's partitions set,
# sdpa_repeat.py): sm_pair_read of memeff_residency_read.cu has SM 0 and SM s read 20 MiB each three
# times after a read that evicts everything; pairs on one partition thrash (each partition holds its home
# lines and the other side's copies) and take longer (1.88-1.91 ms against 1.66-1.68 on an H200; gaps of 1.07-1.12 seen). The two
# clusters split at the largest ratio between neighbouring times, the best of two launches a pair.
import ctypes

import torch


def sm_sides(lib):
    """(side A: SM 0's, side B, SM count); prints "PAIRTIME s ns" and "PARTITION A|B|gap ..." lines."""
    lib.launch_sm_pair_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                        ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.launch_residency_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    junk = torch.ones(512 << 20, dtype=torch.uint8, device="cuda")
    pair = torch.ones(40 << 20, dtype=torch.uint8, device="cuda")
    claimed = torch.zeros(2, dtype=torch.int32, device="cuda")
    sink = torch.zeros(4, dtype=torch.int32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = {}
    for _ in range(2):
        for s in range(1, sms):
            assert lib.launch_residency_read(junk.data_ptr(), junk.numel(), 1, sink.data_ptr()) == 0
            start.record()
            assert lib.launch_sm_pair_read(pair.data_ptr(), 40 << 20, 3, 0, s, claimed.data_ptr(),
                                           sink.data_ptr()) == 0
            end.record()
            torch.cuda.synchronize()
            assert claimed.tolist() == [1, 1], f"SM 0 or SM {s} ran no block"
            best[s] = min(best.get(s, 1e30), start.elapsed_time(end) * 1e6)
    times = sorted(best.values())
    ratio, cut = max((times[i + 1] / times[i], times[i]) for i in range(len(times) - 1))
    for s in sorted(best):
        print(f"PAIRTIME {s} {best[s]:.0f}", flush=True)
    same = [0] + [s for s in sorted(best) if best[s] > cut]
    other = [s for s in sorted(best) if best[s] <= cut]
    print(f"PARTITION A {' '.join(map(str, same))}", flush=True)
    print(f"PARTITION B {' '.join(map(str, other))}", flush=True)
    print(f"PARTITION gap {ratio:.3f}", flush=True)
    assert ratio > 1.04, "the pair times do not fall in two clusters"
    return same, other, sms
