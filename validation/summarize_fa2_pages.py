#!/usr/bin/env python3
"""FlashAttention-2's causal forward against the evenness of its own K and V pages (run_fa2_pages.sh).

    python3 validation/summarize_fa2_pages.py [validation/data/h200_fa2_pages.csv]

prints, per placement (PAD_MIB), the forward's DRAM reads and the one-SM probe reads over 28 MiB of the
windows fa2_pages_probe.py names (kv: K_h, V_h and 6 MiB each of K_{h+1}, V_{h+1}; k: 28 MiB of K from head
h on; the first launch where FA2_REPEATS ran several), the launches' spread on the same pages, then
Pearson's r between the forward's reads and each summary of the probes over the placements. Where the
windows were read from two SMs (PROBE_SMS, kinds kv_sm0, kv_sm4, ...), the first SM's reads are the table's
and the two SMs' (two partitions') reads of the same windows are compared.
"""
import csv
import os
import statistics
import sys

WINDOW = 28 << 20


def compare_partitions(rows):
    """Rows of windows read from several SMs: prints how the SMs' reads of the same windows differ and
    returns the rows with the first SM's windows as plain kv / k (the rest dropped)."""
    sms = list(dict.fromkeys(r["kind"].split("_sm")[1] for r in rows if "_sm" in r["kind"]))
    if not sms:
        return rows
    reads = {(r["pad"], r["kind"], r["head"]): int(r["dram_read_bytes"]) / WINDOW for r in rows}
    first = [(key, v) for key, v in reads.items() if key[1].endswith("_sm" + sms[0])]
    for other in sms[1:]:
        a = [v for _, v in first]
        b = [reads[(p, kind.replace("_sm" + sms[0], "_sm" + other), h)] for (p, kind, h), _ in first]
        diff = sorted(abs(x - y) for x, y in zip(a, b))
        print(f"SM {sms[0]} against SM {other} (other partitions), {len(a)} windows: |difference| median "
              f"{statistics.median(diff):.4f}, max {diff[-1]:.4f} of the window; r {statistics.correlation(a, b):.4f}")
    out = []
    for r in rows:
        if "_sm" not in r["kind"]:
            out.append(r)
        elif r["kind"].endswith("_sm" + sms[0]):
            out.append(dict(r, kind=r["kind"].split("_sm")[0]))
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "data",
                                                              "h200_fa2_pages.csv")
    rows = list(csv.DictReader(open(path)))
    rows = compare_partitions(rows)
    pads = list(dict.fromkeys(int(r["pad"]) for r in rows))
    forward, repeats, summaries = [], [], {"kv mean": [], "kv max": [], "k mean": [], "k max": []}
    for pad in pads:
        mine = [r for r in rows if int(r["pad"]) == pad]
        launches = [int(r["dram_read_bytes"]) / 1e6 for r in mine if r["kind"] == "fa2"]
        fa2 = launches[0]
        if len(launches) > 1:
            repeats.append((pad, launches))
        kv = [int(r["dram_read_bytes"]) / WINDOW for r in mine if r["kind"] == "kv"]
        k = [int(r["dram_read_bytes"]) / WINDOW for r in mine if r["kind"] == "k"]
        forward.append(fa2)
        for name, values in (("kv", kv), ("k", k)):
            summaries[name + " mean"].append(statistics.mean(values))
            summaries[name + " max"].append(max(values))
        k_mib = (int(mine[0]["k_addr"]) % (4 << 20)) / (1 << 20)
        print(f"pad {pad:3} MiB: forward {fa2:6.1f} MB | kv " + " ".join(f"{x:.3f}" for x in kv) +
              " | k " + " ".join(f"{x:.3f}" for x in k) + f" | K at {k_mib:.0f} MiB past 4 MiB")
    print(f"forward over {len(pads)} placements: {min(forward):.1f}-{max(forward):.1f} MB, "
          f"median {statistics.median(forward):.1f}")
    for pad, launches in repeats:
        print(f"pad {pad:3} MiB, {len(launches)} launches on the same pages: {min(launches):.1f}-{max(launches):.1f} MB, "
              f"median {statistics.median(launches):.1f}")
    for name, values in summaries.items():
        print(f"Pearson r, forward reads against the probes' {name}: {statistics.correlation(forward, values):+.3f}")


if __name__ == "__main__":
    main()
