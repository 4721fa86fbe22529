#!/usr/bin/env python3
"""What the chunk probe's eviction sets (SET=sets bash validation/run_l2_chunk_probe.sh) show of the H200's
and the H100's L2 set index. Reads the committed files and prints the figures docs/chip.md quotes ("Sets line
by line", "The H100's eviction sets"):

    python3 validation/l2_sets.py            # the H200
    python3 validation/l2_sets.py --gpu h100   (a minute: every parity mask is tried on each pool)

A set file has a line per set: "chunk:line of the target,status,member count," then the members (chunk:line,
line 0-16383 of a 2 MiB chunk; "f" before a member found among the other partition's lines).
"""
import collections
import gzip
import itertools
import math
import os
import sys
import tarfile

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# One partition's sets: 30 MiB (H200) or 25 MiB (H100) / (16 ways x 128 bytes).
SETS_OF = {"h200": 15360, "h100": 12800}
GPU = sys.argv[sys.argv.index("--gpu") + 1] if "--gpu" in sys.argv else "h200"
SETS = SETS_OF[GPU]


def data(name):
    return os.path.join(DATA, f"{GPU}_{name}")


def read_sets(lines):
    """{target: [members as (chunk, line, far)]} of the sets found (status 1)."""
    sets = {}
    for text in lines:
        if text.startswith("order"):
            continue
        target, status, _, members = text.rstrip("\n").split(",", 3)
        if status != "1":
            continue
        parsed = []
        for m in members.split():
            chunk, line = m.lstrip("f").split(":")
            parsed.append((int(chunk), int(line), m.startswith("f")))
        sets[target] = parsed
    return sets


def pool_lines(cold_gz):
    """Lines in the pool: 32 per 4 KiB block whose two cold loads took under 640 cycles (as the probe)."""
    cold = gzip.open(cold_gz).read()
    return 32 * sum(1 for b in range(len(cold) // 2) if cold[2 * b] * 8 < 640 and cold[2 * b + 1] * 8 < 640)


def translation(a, b, xor):
    """Members of set a that, XORed with `xor`, are members of set b."""
    other = {(c, l) for c, l, _ in b}
    return sum((c, l ^ xor) in other for c, l, _ in a)


def single_tests(name="single"):
    """The targets' sets. h200 _single and h100 _single1: every pool line tested alone; h100 _single: 64 at a
    time (TEST_BLOCK), which finds about three quarters of the members."""
    if not os.path.exists(data(f"l2_sets_{name}.csv")):
        return
    sets = read_sets(open(data(f"l2_sets_{name}.csv")))
    pool = pool_lines(data(f"l2_sets_{name}_cold.u8.gz"))
    sizes = sorted(len(m) + 1 for m in sets.values())
    print(f"{GPU}_l2_sets_{name}.csv: {len(sets)} sets of {sizes[0]}-{sizes[-1]} lines (target included); "
          f"the pool's {pool} lines over {SETS} sets would give {pool / SETS:.1f}")
    for t0, t1, xor in (("0:32", "0:33", 1), ("0:32", "0:36", 4), ("0:32", "0:34", 2), ("0:32", "0:40", 8),
                        ("0:0", "0:1", 1), ("0:0", "0:4", 4), ("0:0", "0:2", 2), ("0:0", "0:8", 8),
                        ("0:0", "0:256", 256)):
        if t0 in sets and t1 in sets:
            print(f"  set of {t1} = set of {t0} with every member XOR {xor}: "
                  f"{translation(sets[t0], sets[t1], xor)} of {len(sets[t0])} members")


def home_bits():
    """The address bits (12-20, within a 2 MiB chunk) whose parity, flipped or not per chunk, says which 4 KiB
    blocks the probe found near: every mask tried, the one that explains the most near blocks printed."""
    for name in sorted(f for f in os.listdir(DATA) if f.startswith(f"{GPU}_l2_sets_") and f.endswith("_cold.u8.gz")):
        cold = gzip.open(os.path.join(DATA, name)).read()
        near = [cold[2 * b] * 8 < 640 and cold[2 * b + 1] * 8 < 640 for b in range(len(cold) // 2)]
        best = (0, 0)
        for mask in range(1, 512):
            explained = 0
            for chunk in range(len(near) // 512):
                ones = [0, 0]
                for b in range(512):
                    if near[chunk * 512 + b]:
                        ones[bin(b & mask).count("1") & 1] += 1
                explained += max(ones)
            best = max(best, (explained, mask))
        bits = [12 + i for i in range(9) if best[1] >> i & 1]
        print(f"  {name}: the parity of address bits {bits} explains {best[0]} of {sum(near)} near blocks "
              f"({len(near) // 512} chunks)")


def far_copies():
    if not os.path.exists(data("l2_sets_far.csv")):
        return print("far lines' copies: not measured on this GPU")
    # Near sets from the same session's single-line tests where there are some (h100: _single1).
    single = data("l2_sets_single1.csv") if os.path.exists(data("l2_sets_single1.csv")) else data("l2_sets_single.csv")
    near = read_sets(open(single))
    far = read_sets(open(data("l2_sets_far.csv")))
    offsets = collections.Counter()
    beside = total = 0
    for target, members in far.items():
        if target not in near:
            continue
        c0, l0 = map(int, target.split(":"))
        near_lines = {(c, l) for c, l, _ in near[target]} | {(c0, l0)}
        for c, l, _ in members:
            total += 1
            close = [ln ^ l for cn, ln in near_lines if cn == c and 0 < ln ^ l < 512]
            beside += bool(close)
            offsets.update(close)
    sizes = [len(m) for m in far.values()]
    print(f"far lines' copies (whole-line reads of the other partition's lines of chunks 0-31): {len(far)} sets, "
          f"{min(sizes)}-{max(sizes)} copies each; {beside} of {total} lie within 64 KiB of a near member of the "
          f"set (same chunk, line XOR under 512), at XOR {dict(offsets.most_common(6))}")

def block_tests():
    if not os.path.exists(data("l2_sets_checks.tar.gz")):
        return print("  not measured on this GPU")
    with tarfile.open(data("l2_sets_checks.tar.gz")) as tar:
        runs = {os.path.basename(m.name)[:-4]: read_sets(tar.extractfile(m).read().decode().splitlines(True))
                for m in tar.getmembers() if m.name.endswith(".csv")}
    single = runs["single_1"]
    for name, sets in sorted(runs.items()):
        low = high = 0
        for target, members in sets.items():
            for c, _, _ in members:
                low += c < 64
                high += c >= 64
        ref = sum(c < 64 for m in single.values() for c, _, _ in m), sum(c >= 64 for m in single.values() for c, _, _ in m)
        print(f"  {name:20s}: members in chunks 0-63 {low:4d}, 64-127 {high:4d} (single_1: {ref[0]}, {ref[1]}; "
              f"{len(sets)} sets)")


def sweep():
    sets = read_sets(open(data("l2_sets_sweep.csv")))
    cells = collections.Counter()
    pairs = collections.defaultdict(collections.Counter)
    for target, members in sets.items():
        c0, l0 = map(int, target.split(":"))
        lines = [(c, l) for c, l, _ in members] + [(c0, l0)]
        per_chunk = collections.Counter(c for c, _ in lines if c < 64)
        for c in range(64):
            cells[per_chunk.get(c, 0)] += 1
        for (a, la), (b, lb) in itertools.combinations(sorted(lines), 2):
            if a != b:
                pairs[(a, b)][la ^ lb] += 1
    n = sum(cells.values())
    mean = sum(k * v for k, v in cells.items()) / n
    poisson = [round(n * math.exp(-mean) * mean ** k / math.factorial(k)) for k in range(3)]
    print(f"sweep (block tests, {len(sets)} sets; members in chunks 64-127 undercounted): lines a set takes from "
          f"one chunk of 0-63: {dict(sorted(cells.items()))}, Poisson {poisson}")
    constant = sorted((k, c.most_common(1)[0][0]) for k, c in pairs.items()
                      if sum(c.values()) >= 20 and c.most_common(1)[0][1] == sum(c.values()))
    print(f"  chunk pairs whose shared lines differ by one XOR constant throughout: {constant}")
    low_pool = 32 * sum(1 for chunk, _ in pool_blocks(data("l2_sets_sweep_cold.u8.gz")) if chunk < 64)
    own = [sum(c < 64 for c, _, _ in m) + (int(t.split(":")[0]) < 64) for t, m in sets.items()]
    mean = sum(own) / len(own)
    sd = math.sqrt(sum((k - mean) ** 2 for k in own) / len(own))
    print(f"  a set's lines in chunks 0-63: mean {mean:.2f}, sd {sd:.2f} (Poisson {math.sqrt(mean):.2f}); the pool's "
          f"{low_pool} lines there over that mean: {low_pool / mean:.0f} sets a partition (the L2's size says {SETS})")
    contiguous(sets)


def pool_blocks(cold_gz):
    """(chunk, block) of the pool's 4 KiB blocks (two cold loads under 640 cycles, as the probe)."""
    cold = gzip.open(cold_gz).read()
    return [(b * 4096 // (2 << 20), b) for b in range(len(cold) // 2)
            if cold[2 * b] * 8 < 640 and cold[2 * b + 1] * 8 < 640]


def contiguous(sets):
    """One SM reading k chunks three times, by the swept sets' members: with a far line's copy beside its
    partner (the H200's rule), a set given more than 8 of the buffer's near lines misses on every pass."""
    print("  one SM, k contiguous chunks read three times, DRAM reads / footprint by the swept sets (first chunk):")
    for start in (0, 8, 16, 32):
        row = []
        for k in range(10, 17):
            loads = [sum(start <= c < start + k for c, _ in lines) for lines in
                     ([(c, l) for c, l, _ in m] + [tuple(map(int, t.split(":")))] for t, m in sets.items())]
            over = sum(n for n in loads if 2 * n > 16)
            row.append(f"{2 * k} MiB {(sum(loads) + 2 * over) / sum(loads):.3f}")
        print(f"    from chunk {start:2d}: " + ", ".join(row))


def main():
    print(f"{GPU.upper()} ({SETS} sets a partition)")
    single_tests()
    single_tests("single1")
    print("home partition within a page (near 4 KiB blocks of each probe's pool):")
    home_bits()
    far_copies()
    print("block tests against single-line tests (the same targets):")
    block_tests()
    sweep()


if __name__ == "__main__":
    main()
