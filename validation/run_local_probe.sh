#!/usr/bin/env bash
# Local memory (register spills) in L2 (validation/local_probe.cu), in one call on the device machine:
#   bash validation/run_local_probe.sh   (from the repository root; $OUT comes back)
# Each launch once under ncu --cache-control all --clock-control base: grids of 1 to 32 waves of blocks that
# each write a private 64 KB local array (scattered 4-byte stores, twice; or coalesced, once), at one, two
# and three blocks per SM. $OUT gets
# <gpu>_local_probe.csv (a row per launch), <gpu>_local_probe_env.txt and run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/localprobe.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_local_probe_env.txt"
nvcc -O3 -arch=sm_90 -Xptxas -v -o "$WORK/local_probe" validation/local_probe.cu || { echo "BUILD FAILED"; exit 1; }
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,l1tex__m_l1tex2xbar_write_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,gpu__time_duration.sum
CSV="$OUT/${G}_local_probe.csv"
echo "blocks,words_per_thread,reps,smem_kb,blocks_per_sm,stores,dram_read_bytes,dram_write_bytes,l1_write_bytes,l1_read_bytes,l2_write_sectors,l2_read_sectors,time_ns" > "$CSV"
run() {  # blocks words reps smem_kb
  local log="$WORK/ncu.log"
  timeout 120 "$NCU" --metrics "$METRICS" --cache-control all --clock-control base -k local_probe_kernel --csv \
    --page raw --print-units base "$WORK/local_probe" "$@" > "$log" 2>&1 || { echo "FAILED $*"; tail -5 "$log"; return; }
  python3 - "$log" "$CSV" "$METRICS" << 'PY'
import csv, io, sys
log, out, metrics = sys.argv[1:4]
text = open(log).read()
result = [l for l in text.splitlines() if l.startswith("RESULT")]
rows = [l for l in text.splitlines() if l.startswith('"')]
row = [r for r in csv.DictReader(io.StringIO("\n".join(rows))) if "local_probe_kernel" in r.get("Kernel Name", "")][0]
fields = dict(kv.split("=") for kv in result[0].split()[1:])
values = [str(int(float(row[n].replace(",", "")))) for n in metrics.split(",")]
line = [fields[k] for k in ("blocks", "words", "reps", "smem_kb", "blocks_per_sm", "stores")] + values
open(out, "a").write(",".join(line) + "\n")
print(" ".join(line))
PY
}
for blocks in 264 1056 2112 8448; do run "$blocks" 128 2 100; done
for blocks in 132 528 4224; do run "$blocks" 128 2 200; done
run 264 512 2 100
run 2112 512 2 100
# Each line written once per pass (coalesced): whether blocks that follow each other reuse their slot's
# lines at one, two and three blocks per SM, without the rewrites of the scattered stores.
for per_sm in 1 2 3; do
  smem=$((200 / per_sm))  # KB of shared memory per block that leaves room for per_sm blocks
  for waves in 1 4 16 32; do run $((waves * 132 * per_sm)) 128 1 "$smem" coalesced; done
done
