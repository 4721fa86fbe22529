#!/usr/bin/env bash
# The L2 probe's read and rewrite modes on the SMs of one L2 partition (16 SMs in a CUDA green context:
# l2_probe_green.py), in one call on the device machine:
#   bash validation/run_l2_probe_green.sh   (from the repository root; $OUT comes back)
# Each launch under ncu --cache-control all --clock-control base; $OUT gets <gpu>_l2_probe_green.csv (one
# row per launch as run_l2_probe.sh's, blocks one per SM of the context, plus sms), _env.txt and _run.log.
# RUNS: "mode MiB passes [blocks]" lines (blocks: one per SM of the context unless given); SMS: the context's
# SMs (16); TAG: a suffix for the files.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/l2green.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
PREFIX="${G}_l2_probe_green${TAG:-}"  # TAG: a suffix for another set's files
write_env "$OUT/${PREFIX}_env.txt"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$OUT/${PREFIX}_env.txt"
nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -Dmain=l2_probe_main -o "$WORK/l2_probe.so" \
  validation/l2_probe.cu || exit 1
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -o "$WORK/smid.so" validation/memeff_residency_read.cu || exit 1
SMS="${SMS:-16}"
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,gpu__time_duration.sum
RUNS="${RUNS:-$(for m in 8 16 24 28 32 40 48 64; do echo "shared $m 3"; done; for m in 4 8 16 24 32; do echo "rmwspread $m 3"; done; for m in 16 24 32 40 48; do echo "rmw $m 3"; done)}"
echo "ncu --cache-control all --clock-control base --metrics $METRICS; SMS=$SMS" >> "$OUT/${PREFIX}_env.txt"
CSV="$OUT/${PREFIX}.csv"
echo "mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,l2_read_sectors,lts_tex_miss_sectors,lts_fabric_sectors,time_ns,sms" > "$CSV"
while read -r mode mib passes blocks; do
  [ -z "$mode" ] && continue
  log="$WORK/ncu.log"
  rm -f "$WORK/times.csv"
  # With blocks given, each block's SM too (l2_probe's TIMES: a timestamp store per pass besides the reads).
  [ -n "${blocks:-}" ] && export TIMES="$WORK/times.csv" || unset TIMES
  SMID_LIB="$WORK/smid.so" SMS=$SMS timeout 120 "$NCU" --metrics "$METRICS" --cache-control all --clock-control base \
    -k regex:l2_probe_kernel --csv --page raw --print-units base \
    python3 validation/l2_probe_green.py "$WORK/l2_probe.so" "$mode" $((mib << 20)) "$passes" "${blocks:-$SMS}" > "$log" 2>&1
  grep -E '^(RESULT|GREEN|SMIDS)' "$log" | tee -a "$OUT/${PREFIX}_run.log"
  [ -f "$WORK/times.csv" ] && echo "BLOCK_SMS $(tail -n +2 "$WORK/times.csv" | cut -d, -f2 | tr '\n' ' ')" |
    tee -a "$OUT/${PREFIX}_run.log"
  python3 - "$log" "$CSV" "$mode" $((mib << 20)) "$passes" "$SMS" "${blocks:-$SMS}" << 'PY'
import csv, io, sys
log, out, mode, nbytes, passes, sms, launched = sys.argv[1:8]
rows = [l for l in open(log).read().splitlines() if l.startswith('"')]
table = list(csv.DictReader(io.StringIO("\n".join(rows))))
if len(table) < 2:
    print("no profile for", mode, nbytes); sys.exit(0)
r = table[1]  # table[0]: units
num = lambda k: int(float(r[k].replace(",", "")))
with open(out, "a") as f:
    blocks = 1 if mode in ("single", "wsingle", "retouch") else launched  # l2_probe runs these on one block
    f.write(",".join(map(str, [mode, nbytes, passes, blocks, num("dram__bytes_read.sum"), num("dram__bytes_write.sum"),
                               num("lts__t_sectors_srcunit_tex_op_read.sum"), num("lts__t_sectors_srcunit_tex_lookup_miss.sum"),
                               num("lts__t_sectors_srcunit_ltcfabric.sum"), num("gpu__time_duration.sum"), sms])) + "\n")
PY
done <<< "$RUNS"
cat "$CSV"
