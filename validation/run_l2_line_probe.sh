#!/usr/bin/env bash
# L2 line probe (validation/l2_line_probe.cu), in one call on the device machine:
#   bash validation/run_l2_line_probe.sh   (from the repository root; $OUT comes back)
# One thread reads every line of a buffer twice and times each load: contiguous buffers around the knee
# of one SM's capacity, and windows of the kernels' head layout (6 heads at 8 and 4 MiB strides, 2 heads at
# 8 MiB). $OUT gets <gpu>_l2_lines_<layout>_<MiB>[_h<heads>_s<stride MiB>].u8.gz (one byte per line and
# pass: cycles / 8), <gpu>_l2_line_probe_env.txt and run.log (with each run's histogram and base addresses).
#   LANES=32 bash validation/run_l2_line_probe.sh   (a warp reads each whole line; files end in _w32)
#   SET=grow bash validation/run_l2_line_probe.sh   (a warp reads the first n 128 KiB blocks of a 40 MiB
#     buffer twice, n from 200 to 320, and which blocks turn slow as each joins: <gpu>_l2_grow*.csv, a line
#     per n; twice more after 1 GiB and 3 GiB of other allocations, for other physical pages)
#   SET=grow16 bash validation/run_l2_line_probe.sh (the same with a digit per 16 KiB, n from 200 to 260,
#     two placements: <gpu>_l2_grow16_pad*.csv)
#   SET=counted bash validation/run_l2_line_probe.sh   (three of those launches under ncu, whose DRAM and
#     L2 counters say how many of the slow second-pass loads were misses; <gpu>_l2_line_probe_counted.csv)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/l2line.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_l2_line_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/probe" validation/l2_line_probe.cu || { echo "BUILD FAILED"; exit 1; }
MB=$((1 << 20))
run() {  # layout MiB [heads stride_MiB]
  local name="${G}_l2_lines_$1_$2${3:+_h$3_s$4}$([ "${LANES:-1}" = 1 ] || echo "_w$LANES")"
  HEAD_BYTES=$(( ${4:-8} * MB )) timeout 120 "$WORK/probe" "$1" $(($2 * MB)) 2 "$WORK/$name.u8" ${3:+"$3"} ||
    { echo "FAILED $*"; return; }
  gzip -c "$WORK/$name.u8" > "$OUT/$name.u8.gz"
}
start=$SECONDS
if [ "${SET:-}" = grow ]; then
  for pad in 0 1024 3072; do
    LANES=32 PAD_MIB=$pad timeout 300 "$WORK/probe" grow $((40 * MB)) 2 "$OUT/${G}_l2_grow_pad${pad}.csv" 200 ||
      echo "FAILED grow $pad"
  done
  echo "done in $((SECONDS - start)) s"
  exit 0
fi
if [ "${SET:-}" = grow16 ]; then
  # The same at 16 KiB granules, from 200 to 260 blocks, two placements: where each piece begins and ends
  # (GROW_FIRST, GROW_LAST and GROW_PADS change the range and the placements).
  for pad in ${GROW_PADS:-0 1024}; do
    LANES=32 PAD_MIB=$pad GRAIN_KIB=16 timeout 300 "$WORK/probe" grow $((${GROW_LAST:-260} * MB / 8)) 2 \
      "$OUT/${G}_l2_grow16_pad${pad}_${GROW_FIRST:-200}_${GROW_LAST:-260}.csv" "${GROW_FIRST:-200}" ||
      echo "FAILED grow16 $pad"
  done
  echo "done in $((SECONDS - start)) s"
  exit 0
fi
if [ "${SET:-}" = counted ]; then
  METRICS=dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum
  CSV="$OUT/${G}_l2_line_probe_counted.csv"
  echo "lanes,layout,bytes,heads,head_bytes,lines,dram_read_bytes,l2_read_sectors,lts_tex_miss_sectors,lts_fabric_sectors" > "$CSV"
  for args in "single 26 0 8 1" "single 30 0 8 1" "heads 24 6 8 1" "single 26 0 8 32" "single 30 0 8 32" "heads 24 6 8 32"; do
    set -- $args
    extra=$([ "$1" = heads ] && echo "$3")
    LANES=$5 HEAD_BYTES=$(($4 * MB)) timeout 120 "$NCU" --metrics "$METRICS" --cache-control all -k line_kernel --csv --page raw \
      --print-units base "$WORK/probe" "$1" $(($2 * MB)) 2 "$WORK/x.u8" $extra > "$WORK/ncu.log" 2>&1 ||
      { echo "FAILED $args"; tail -5 "$WORK/ncu.log"; continue; }
    python3 - "$WORK/ncu.log" "$CSV" "$5" "$1" $(($2 * MB)) "$3" $(($4 * MB)) << 'PY'
import csv, io, sys
log, out, lanes, layout, nbytes, heads, head_bytes = sys.argv[1:8]
text = open(log).read()
lines = [l for l in text.splitlines() if l.startswith("RESULT")][0].split()
count = [kv.split("=")[1] for kv in lines if kv.startswith("lines=")][0]
row = [r for r in csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"'))))
       if r.get("Kernel Name", "").startswith("line_kernel")][0]
names = ["dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
         "lts__t_sectors_srcunit_tex_lookup_miss.sum", "lts__t_sectors_srcunit_ltcfabric.sum"]
values = [str(int(float(row[n].replace(",", "")))) for n in names]
line = [lanes, layout, nbytes, heads, head_bytes, count] + values
open(out, "a").write(",".join(line) + "\n")
print(" ".join(line))
PY
  done
  echo "done in $((SECONDS - start)) s"
  exit 0
fi
for s in 26 30 32; do run single "$s"; done
run heads 24 6 8
run heads 24 6 4
run heads 28 2 8
run heads 30 6 8
echo "done in $((SECONDS - start)) s"
