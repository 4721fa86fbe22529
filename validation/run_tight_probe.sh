#!/usr/bin/env bash
# The L2 probe's reading modes as tight loops (validation/tight_probe.cu), in one call on the device machine:
#   bash validation/run_tight_probe.sh             (from the repository root; $OUT comes back)
#   SET=sleep bash validation/run_tight_probe.sh   (spread at 32 and 48 MiB with each thread sleeping 0 to
#                                                  1,600 ns after every chunk: DRAM bytes against the pace)
#   SET=one bash validation/run_tight_probe.sh     (the reads with the sleeping loop at 0 ns: one load a
#                                                  thread in flight)
# $OUT gets <gpu>_tight_probe.csv in validation/data/<gpu>_l2_probe.csv's layout plus a column in_flight (4:
# the chunks a block has in flight, the compiler's unroll of the loop, from the SASS; 1 for SET=sleep, whose
# loop the compiler does not unroll), which `attnsim probe --measured` runs as `--in-flight 4`; <gpu>_tight_probe_sass.txt (the loop's loads and
# branches), <gpu>_tight_probe_env.txt and run.log. Every launch under Nsight Compute's base clocks with the
# L2 flushed, as the other probes.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/tightprobe.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_tight_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/tight_probe" validation/tight_probe.cu || { echo "BUILD FAILED"; exit 1; }
cuobjdump -sass "$WORK/tight_probe" | grep -E "Function|LDG|BRA|ISETP" > "$OUT/${G}_tight_probe_sass.txt"
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum,gpu__time_duration.sum
SET="${SET:-reads}"
export SET
[ "$SET" = one ] && export SLEEP_NS=0
[ "$SET" = reads ] && unset SLEEP_NS
CSV="$OUT/${G}_tight_probe$([ "$SET" = reads ] || echo "_$SET").csv"
HEADER="mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,l2_read_sectors,lts_tex_hit_sectors,lts_tex_miss_sectors,lts_fabric_sectors,lts_hit_sectors,lts_miss_sectors,time_ns,in_flight"
[ "$SET" = sleep ] && HEADER="$HEADER,sleep_ns"
echo "$HEADER" > "$CSV"
run() {  # mode bytes passes blocks
  local log="$WORK/ncu.log"
  timeout 120 "$NCU" --metrics "$METRICS" --cache-control all --clock-control base -k regex:tight_kernel --csv \
    --page raw --print-units base "$WORK/tight_probe" "$@" > "$log" 2>&1 || { echo "FAILED $*"; tail -5 "$log"; return; }
  python3 - "$log" "$CSV" << 'EOF'
import csv, io, os, sys
log, out = sys.argv[1:3]
text = open(log).read()
result = [l for l in text.splitlines() if l.startswith("RESULT")]
rows = [l for l in text.splitlines() if l.startswith('"')]
row = [r for r in csv.DictReader(io.StringIO("\n".join(rows))) if "tight_kernel" in r.get("Kernel Name", "")][0]
fields = dict(kv.split("=") for kv in result[0].split()[1:])
names = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
         "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
         "lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_lookup_hit.sum",
         "lts__t_sectors_lookup_miss.sum", "gpu__time_duration.sum"]
values = [str(int(float(row[n].replace(",", "")))) for n in names]
sleeping = "SLEEP_NS" in os.environ  # the sleeping loop keeps one load a thread in flight
line = [fields["mode"], fields["bytes"], fields["passes"], fields["blocks"]] + values + ["1" if sleeping else "4"]
if os.environ.get("SET") == "sleep":
    line += [fields["sleep_ns"]]
open(out, "a").write(",".join(line) + "\n")
print(" ".join(line))
EOF
}
MB=$((1 << 20))
if [ "$SET" = sleep ]; then
  for mib in 32 48; do
    for ns in 0 100 200 400 800 1600; do export SLEEP_NS=$ns; run spread $((mib * MB)) 3 132; done
  done
  cat "$CSV"
  exit 0
fi
for mib in 8 32; do run single $((mib * MB)) 3 1; done
for mib in 16 24 32 40 48 64; do run spread $((mib * MB)) 3 132; done
for mib in 16 32 48 64; do run private $((mib * MB)) 3 132; done
# Free clocks, warm: the launch's time alone (CUDA events), for the pace without Nsight Compute.
for args in "single $((8 * MB)) 3 1" "single $((32 * MB)) 3 1" "spread $((32 * MB)) 3 132"; do
  # shellcheck disable=SC2086
  "$WORK/tight_probe" $args
done
cat "$CSV"
