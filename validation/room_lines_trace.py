#!/usr/bin/env python3
# The model's line-by-line twin of memeff_room_probe.py's partitions set: a trace of three kernels of one
# block per core (132), "hot_read" (the hot buffer, each 128-byte line loaded by one block drawn at random
# from the readers' cores, every block's lines in address order), "plain_read" (the plain buffer the same
# way) and "reread" (every 5th line of the hot buffer's first half, by every core), as the GPU's warps take
# lines from a counter. Cores 0-65 are side A and 66-131 side B when run with that attachment:
#   python3 validation/room_lines_trace.py 24 16 all all > t.trace
#   attnsim run -c configs/h200.yaml -p chip.l2_between_kernels=keep \
#     -p l2.core_partitions=$(python3 -c "print('0' * 66 + '1' * 66)") t.trace
# The share of the first half lost: (the "DRAM read" line's hot bytes - HOT_MIB MiB) / (ceil(lines / 2 / 5)
# x 128), lines = HOT_MIB MiB / 128. HOT_MIB PLAIN_MIB HOT_BY PLAIN_BY (all, A or B) [SEED].
import random
import sys

CORES, SIDE = 132, 66


def kernel(name, tensor, lines, readers, rng):
    per_core = {c: [] for c in range(CORES)}
    for line in lines:
        per_core[rng.choice(readers)].append(line)
    body = []
    for c in range(CORES):
        body.append(f".block {name}({c})")
        body.extend(f"LOAD {tensor}[{i}:{i + 1}, 0:64], t" for i in per_core[c])
    return [f".kernel {name} grid({CORES})"], body


def main(hot_mib, plain_mib, hot_by, plain_by, seed=1):
    rng = random.Random(seed)
    sides = {"all": list(range(CORES)), "A": list(range(SIDE)), "B": list(range(SIDE, CORES))}
    hot_lines, plain_lines = hot_mib << 13, plain_mib << 13  # 128-byte lines of 64 f16
    head = [f".tensor hot[{hot_lines}][64] f16", f".tensor plain[{plain_lines}][64] f16", ".buffer t[1][64] f16"]
    kernels, bodies = [], []
    for name, tensor, lines, by in (("hot_read", "hot", range(hot_lines), hot_by),
                                    ("plain_read", "plain", range(plain_lines), plain_by),
                                    ("reread", "hot", range(0, hot_lines // 2, 5), "all")):
        decl, body = kernel(name, tensor, list(lines), sides[by], rng)
        kernels += decl
        bodies += body
    print("\n".join(head + kernels + bodies))


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit("usage: room_lines_trace.py HOT_MIB PLAIN_MIB HOT_BY PLAIN_BY [SEED]")
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], *(int(a) for a in sys.argv[5:6]))
