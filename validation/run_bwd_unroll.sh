#!/usr/bin/env bash
# Does the backward's rolled k-loop cost time? kernels_tc_bwd.cu keeps the products' k-loops rolled
# (`#pragma unroll 1`: each k-step's ldmatrix, then its mma, nothing loaded ahead); this builds the same
# kernels with them unrolled (-DATTN_BWD_UNROLL_K) and times both on every configuration of
# tc_configs_bwd.txt under Nsight Compute (base clocks, L2 flushed, as the validation data), then profiles
# three configurations of each at source level (stall reasons per SASS instruction).
#   bash validation/run_bwd_unroll.sh       (from the repository root, on the device machine; $OUT comes back)
# Writes $OUT/<gpu>_bwd_unroll.tar.gz holding <gpu>_bwd_unroll.csv (variant, configuration, kernel, time, clock, registers), the source
# pages (bwd_unroll_src_*.csv.gz), each variant's ptxas report, the environment and the log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/attnunroll.XXXXXX)"
RES="$WORK/res"  # everything goes into one archive in $OUT at the end
mkdir -p "$RES"
exec > >(tee -a "$RES/bwd_unroll_run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$RES/${G}_bwd_unroll_env.txt"
METRICS="gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,launch__registers_per_thread,launch__grid_size,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem"
flags=(-O3 -std=c++17 -arch=sm_90 -lineinfo -Xptxas -v)

for variant in rolled unrolled; do
  b="$WORK/$variant"
  mkdir -p "$b"
  extra=()
  [ "$variant" = unrolled ] && extra=(-DATTN_BWD_UNROLL_K)
  nvcc "${flags[@]}" "${extra[@]}" -c validation/kernels_tc_bwd.cu -o "$b/k.o" 2> "$RES/bwd_unroll_ptxas_$variant.txt" || exit 1
  nvcc -O3 -std=c++17 -arch=sm_90 -c validation/harness_bwd.cu -o "$b/h.o" || exit 1
  nvcc -arch=sm_90 "$b/k.o" "$b/h.o" -o "$b/harness_bwd" || exit 1
done
echo "built both variants at ${SECONDS}s"

CSV="$RES/${G}_bwd_unroll.csv"
echo "variant,config,kernel,time_ns,sm_cycles,sm_clock_hz,registers,grid,ok" > "$CSV"
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  cfg="${line#harness_bwd }"
  for variant in rolled unrolled; do
    H="$WORK/$variant/harness_bwd"
    # shellcheck disable=SC2086
    timeout 90 ncu --metrics "$METRICS" --cache-control all --clock-control base -k regex:sched_ --csv \
      --print-units base "$H" $cfg --reps 0 > "$WORK/m.csv" 2> "$WORK/m.err" || { echo "ncu failed: $variant $cfg"; tail -n 3 "$WORK/m.err"; }
    ok="$(grep -o 'ok=[01]' "$WORK/m.csv" | head -n1)"
    python3 - "$WORK/m.csv" "$variant" "$cfg" "$ok" >> "$CSV" << 'EOF'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]
ix = {h: i for i, h in enumerate(hdr)}
per = {}
for r in rows[1:]:
    if r[ix["ID"]] == "ID":
        continue
    key = (r[ix["ID"]], r[ix["Kernel Name"]].split("(")[0])
    per.setdefault(key, {})[r[ix["Metric Name"]]] = r[ix["Metric Value"]].replace(",", "")
for (kid, name), m in sorted(per.items(), key=lambda kv: int(kv[0][0])):
    print(",".join([sys.argv[2], sys.argv[3].replace(",", " "), name.replace(",", " "),
                    m.get("gpu__time_duration.sum", ""), m.get("sm__cycles_elapsed.avg", ""),
                    m.get("sm__cycles_elapsed.avg.per_second", ""), m.get("launch__registers_per_thread", ""),
                    m.get("launch__grid_size", ""), sys.argv[4]]))
EOF
  done
  echo "$cfg done at ${SECONDS}s"
done < validation/tc_configs_bwd.txt

echo "=== source-level profiles"
for cfg in "--schedule flash2-bwd-no-d --n 4096 --d 64 --heads 8 --block-q 128 --block-k 64" \
           "--schedule flash2-bwd --n 4096 --d 64 --heads 8 --block 64" \
           "--schedule flash2-bwd-no-d --n 4096 --d 128 --heads 8 --block-q 128 --block-k 64"; do
  for variant in rolled unrolled; do
    tag="$(echo "$variant $cfg" | tr -c 'a-z0-9\n' '_' | tr -s '_')"
    # shellcheck disable=SC2086
    timeout 150 ncu --section WarpStateStats --section SourceCounters --section SchedulerStats --import-source yes \
      --cache-control all --clock-control base -k regex:sched_flash2 -f -o "$WORK/$tag" \
      "$WORK/$variant/harness_bwd" $cfg --reps 0 > "$WORK/$tag.out" 2>&1 || { echo "profile failed: $tag"; tail -n 3 "$WORK/$tag.out"; }
    ncu --import "$WORK/$tag.ncu-rep" --csv --page source --print-source sass > "$RES/bwd_unroll_src_$tag.csv" 2>&1
    ncu --import "$WORK/$tag.ncu-rep" --csv --page details > "$RES/bwd_unroll_details_$tag.csv" 2>&1
    gzip -f "$RES/bwd_unroll_src_$tag.csv"
    echo "$tag profiled at ${SECONDS}s"
  done
done
echo "=== rolled / unrolled, time per kernel"
python3 - "$CSV" << 'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    t.setdefault((r["config"], r["kernel"]), {})[r["variant"]] = r
for (cfg, k), v in t.items():
    if "rolled" in v and "unrolled" in v and v["rolled"]["time_ns"] and v["unrolled"]["time_ns"]:
        a, b = float(v["rolled"]["time_ns"]), float(v["unrolled"]["time_ns"])
        print(f"{cfg[:70]:70s} {k[:34]:34s} rolled {a:10.0f} unrolled {b:10.0f} ratio {b / a:.3f} ok {v['unrolled']['ok']}")
EOF
# Everything in one archive (the lent machine returns a limited number of files).
tar czf "$OUT/${G}_bwd_unroll.tar.gz" -C "$RES" . && echo "archived $OUT/${G}_bwd_unroll.tar.gz"
