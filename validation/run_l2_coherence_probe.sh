#!/usr/bin/env bash
# L2 coherence probe (validation/l2_coherence_probe.cu), in one call on the device machine:
#   bash validation/run_l2_coherence_probe.sh   (from the repository root; $OUT comes back)
#   SET=farfill bash validation/run_l2_coherence_probe.sh   (where a line fetched for a far SM enters its home
#     partition's replacement order: SM 128 reads B, SM 4, 0, 5 or 1 reads A, SM 128 reads C and A again;
#     A and B 0.4 of a partition, C 0.5 and 0.7; and the same with nothing read by the other SM, the
#     control; <gpu>_l2_farfill_probe.csv, columns as refresh's)
#   SET=share bash validation/run_l2_coherence_probe.sh   (how a partition's home lines and its copies of
#     far-homed lines give way to each other: SM 128 reads A and B (0.4 of a partition each) and C (0.3, 0.4,
#     0.5), then A backwards; SM 4 or 5 (or 0, the control) reads each buffer just after SM 128 (reads1),
#     just before (reads2) or not at all (reads0). The last read's DRAM bytes are A's lines lost at home,
#     its fabric sectors those of its copies; <gpu>_l2_share_probe.csv, columns as refresh's)
#   SET=knee bash validation/run_l2_coherence_probe.sh   (how a partition's sets fill: SM 128 (or SM 4) reads X (26
#     to 34 MiB, as A and B of `share` with C one 16 KiB step), then its older half backwards: the misses
#     are the lines past what each set holds, summed over the sets; <gpu>_l2_knee_probe.csv)
#   SET=kneeclean bash validation/run_l2_coherence_probe.sh   (knee's launches after a kernel reading 256
#     MiB, under ncu --cache-control none and application replay: whether what ncu's flush leaves in L2
#     takes room; <gpu>_l2_kneeclean_probe.csv)
#   SET=kneefine bash validation/run_l2_coherence_probe.sh   (knee's launches for SM 128 at 28 to 29.25 MiB
#     in quarter MiB, at 36 and 40 MiB; <gpu>_l2_kneefine_probe.csv; and at 28.5 to 30 MiB starting 1 MiB
#     into the allocation, <gpu>_l2_kneefine_offset_probe.csv)
#   SET=kneeoffsets bash validation/run_l2_coherence_probe.sh   (knee's launches for SM 128 at 28.5 to 32
#     MiB, starting 0.25, 0.5, 0.75, 1 and 1.5 MiB into the allocation; the mode ends in :off<bytes>;
#     <gpu>_l2_kneeoffsets_probe.csv)
#   SET=kneesources bash validation/run_l2_coherence_probe.sh   (knee's launch at 26, 29 and 34 MiB with L2
#     sectors by source unit, aperture and operation, and the data-side fills: who else uses the L2 while a
#     read-only stream runs; raw ncu CSVs <gpu>_l2_kneesources_<KiB>k.csv)
#   SET=kneeunset bash validation/run_l2_coherence_probe.sh   (knee's launches at 26 to 34 MiB with no
#     cudaMemset of the buffers before (PROBE_NO_MEMSET): whether the stores before the launch take room;
#     <gpu>_l2_kneeunset_probe.csv)
#   SET=refreshsweep bash validation/run_l2_coherence_probe.sh   (refresh's launches with A 0.4 of a partition and C
#     0.45 to 0.85 in twentieths, SM 4 (across the fabric) or SM 0 reading A; three with nothing read:
#     where A's home lines start to go; <gpu>_l2_refreshsweep_probe.csv)
#   SET=copyhit bash validation/run_l2_coherence_probe.sh   (whether a hit on a copy keeps the home line
#     young: share's OTHER_READS 3 (SM 128 reads A, SM 4 reads A, SM 128 reads B, SM 4 reads A again, SM 128
#     reads C and A backwards) and 4 (without SM 4's second read), A and B 0.4 of a partition, C 0.5 to 0.8;
#     and 3 with SM 0 (the owner's partition) at C 0.6; <gpu>_l2_copyhit_probe.csv)
#   SET=refresh bash validation/run_l2_coherence_probe.sh   (whether a read across the fabric keeps the
#     home line young: SM 128 reads A and B, SM 4, 0, 5 or 1 reads A or not, SM 128 reads C and A again;
#     A and B 0.4 of a partition, C 0.6, and 1/3 and 8/15; <gpu>_l2_refresh_probe.csv, mode, part_bytes,
#     c_bytes, blocks, then the counters)
# SM 128 and one other SM take turns rewriting a buffer. On the H100, SMs 4 and 5 are attached to the other
# L2 partition than SM 128 and SMs 0 and 1 to the same one (validation/data/h100_l2_probe_pair.csv); each
# pair with plain reads (fence 0) and with a fence after the turn is taken (fence 1), 1 and 8 rounds.
# Every launch once under ncu --cache-control all --clock-control base. $OUT gets
# <gpu>_l2_coherence_probe.csv (mode, bytes, rounds, blocks, then the counters), <gpu>_l2_coherence_probe_env.txt
# and run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/l2coh.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
SET="${SET:-rewrite}"
CACHE_FLAGS="--cache-control all"
if [ "$SET" = kneeclean ]; then  # L2 left by evict_kernel's 256 MiB of reads, not by ncu's flush
  CACHE_FLAGS="--cache-control none --replay-mode application"
  export PROBE_EVICT_BYTES=$((256 << 20))
fi
NAME=$(case "$SET" in refresh) echo l2_refresh_probe ;; copyhit) echo l2_copyhit_probe ;; refreshsweep) echo l2_refreshsweep_probe ;; farfill) echo l2_farfill_probe ;; share) echo l2_share_probe ;; knee) echo l2_knee_probe ;; kneeclean) echo l2_kneeclean_probe ;; kneefine) echo l2_kneefine_probe ;; kneeoffsets) echo l2_kneeoffsets_probe ;; kneesources) echo l2_kneesources ;; kneeunset) echo l2_kneeunset_probe ;; *) echo l2_coherence_probe ;; esac)
write_env "$OUT/${G}_${NAME}_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/probe" validation/l2_coherence_probe.cu || { echo "BUILD FAILED"; exit 1; }
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum,gpu__time_duration.sum
CSV="$OUT/${G}_${NAME}.csv"
COLUMNS=$([ "$SET" = rewrite ] && echo "mode,bytes,passes,blocks" || echo "mode,part_bytes,c_bytes,blocks")
echo "$COLUMNS,dram_read_bytes,dram_write_bytes,l2_read_sectors,lts_tex_hit_sectors,lts_tex_miss_sectors,lts_fabric_sectors,lts_hit_sectors,lts_miss_sectors,time_ns" > "$CSV"
MB=$((1 << 20))
run() {  # bytes rounds sm_a sm_b fence, or refresh|share part_bytes c_bytes sm_owner sm_other other_reads
  local log="$WORK/ncu.log"
  # shellcheck disable=SC2086  # CACHE_FLAGS is a list of flags
  timeout 120 "$NCU" --metrics "$METRICS" $CACHE_FLAGS --clock-control base -k "regex:coherence_kernel|refresh_kernel|share_kernel" \
    --csv --page raw --print-units base "$WORK/probe" "$@" > "$log" 2>&1 || { echo "FAILED $*"; tail -5 "$log"; return; }
  python3 - "$log" "$CSV" << 'EOF'
import csv, io, sys
log, out = sys.argv[1:3]
text = open(log).read()
result = [l for l in text.splitlines() if l.startswith("RESULT")]
rows = [l for l in text.splitlines() if l.startswith('"')]
row = [r for r in csv.DictReader(io.StringIO("\n".join(rows))) if r.get("Kernel Name", "").startswith(("coherence_kernel", "refresh_kernel", "share_kernel"))][0]
fields = dict(kv.split("=") for kv in result[0].split()[1:])
names = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
         "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
         "lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_lookup_hit.sum",
         "lts__t_sectors_lookup_miss.sum", "gpu__time_duration.sum"]
values = [str(int(float(row[n].replace(",", "")))) for n in names]
sizes = [fields["part_bytes"], fields["c_bytes"]] if "part_bytes" in fields else [fields["bytes"], fields["passes"]]
line = [fields["mode"]] + sizes + [fields["blocks"]] + values
open(out, "a").write(",".join(line) + "\n")
print(" ".join(line), "ran=" + fields["ran"], "gave_up=" + fields["gave_up"])
EOF
}
if [ "$SET" = kneeunset ]; then  # knee's launches with the buffers never stored to
  export PROBE_NO_MEMSET=1
  for kib in 26624 29696 31232 32768 34816; do  # 26, 29, 30.5, 32, 34 MiB
    run share $((kib * 1024 / 2)) 16384 128 4 0
  done
  unset PROBE_NO_MEMSET
elif [ "$SET" = kneesources ]; then  # who else looks lines up in L2 during the knee's launches: raw ncu CSVs
  SOURCES=lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_gcc.sum,lts__t_sectors_srcunit_l.sum
  for u in tex ltcfabric gcc l; do
    SOURCES=$SOURCES,lts__t_sectors_srcunit_${u}_op_read.sum,lts__t_sectors_srcunit_${u}_op_write.sum
    SOURCES=$SOURCES,lts__t_sectors_srcunit_${u}_lookup_hit.sum,lts__t_sectors_srcunit_${u}_lookup_miss.sum
  done
  SOURCES=$SOURCES,lts__t_sectors_aperture_device.sum,lts__t_sectors_aperture_peer.sum,lts__t_sectors_aperture_sysmem.sum
  SOURCES=$SOURCES,lts__d_sectors.sum,lts__d_sectors_fill_device.sum,lts__d_sectors_fill_sysmem.sum,lts__d_decomp_input_sectors.sum
  SOURCES=$SOURCES,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum
  SOURCES=$SOURCES,dram__sectors_read.sum,dram__sectors_write.sum
  for kib in 26624 29696 34816; do  # 26, 29, 34 MiB
    "$NCU" --metrics "$SOURCES" --cache-control all --clock-control base -k regex:share_kernel --csv --page raw \
      --print-units base "$WORK/probe" share $((kib * 1024 / 2)) 16384 128 4 0 > "$OUT/${G}_l2_kneesources_${kib}k.csv" 2>&1
  done
elif [ "$SET" = kneeoffsets ]; then
  for offset in 262144 524288 786432 1048576 1572864; do
    export PROBE_OFFSET_BYTES=$offset
    for kib in 29184 29696 30208 30720 31744 32768; do  # 28.5 to 32 MiB
      run share $((kib * 1024 / 2)) 16384 128 4 0
      sed -i '$ s/^share:\([^,]*\)/share:\1:off'"$offset"'/' "$CSV"
    done
  done
  unset PROBE_OFFSET_BYTES
elif [ "$SET" = kneefine ]; then
  for kib in 28672 28928 29184 29440 29696 29952 36864 40960; do  # 28 to 29.25 MiB, 36 and 40
    run share $((kib * 1024 / 2)) 16384 128 4 0
  done
  head -n1 "$CSV" > "$OUT/${G}_l2_kneefine_offset_probe.csv"
  CSV="$OUT/${G}_l2_kneefine_offset_probe.csv"
  export PROBE_OFFSET_BYTES=$((1 << 20))
  for kib in 29184 29696 30208 30720; do  # 28.5 to 30 MiB, 1 MiB into the allocation
    run share $((kib * 1024 / 2)) 16384 128 4 0
  done
  unset PROBE_OFFSET_BYTES
elif [ "$SET" = knee ] || [ "$SET" = kneeclean ]; then
  for kib in 26624 28672 29696 30208 30720 31232 31744 32768 34816; do  # 26 to 34 MiB
    run share $((kib * 1024 / 2)) 16384 128 4 0
    run share $((kib * 1024 / 2)) 16384 4 128 0  # SM 4: the other partition
  done
elif [ "$SET" = copyhit ]; then  # share's turns 3 and 4: does a hit on a copy renew the home line?
  L2=$(echo "$GPU" | grep -q H200 && echo 60 || echo 50)  # MiB
  HALF=$((L2 * MB / 2))
  for tenths in 5 6 7 8; do
    for reads in 3 4; do run share $((HALF * 2 / 5)) $((HALF * tenths / 10)) 128 4 "$reads"; done
  done
  run share $((HALF * 2 / 5)) $((HALF * 6 / 10)) 128 0 3
elif [ "$SET" = share ]; then
  L2=$(echo "$GPU" | grep -q H200 && echo 60 || echo 50)  # MiB
  HALF=$((L2 * MB / 2))
  for tenths in 3 4 5; do
    run share $((HALF * 2 / 5)) $((HALF * tenths / 10)) 128 4 0
    for other in 4 5 0; do
      for reads in 1 2; do run share $((HALF * 2 / 5)) $((HALF * tenths / 10)) 128 "$other" "$reads"; done
    done
  done
elif [ "$SET" = farfill ]; then
  L2=$(echo "$GPU" | grep -q H200 && echo 60 || echo 50)  # MiB
  HALF=$((L2 * MB / 2))
  for other in 4 0 5 1; do
    run refresh $((HALF * 2 / 5)) $((HALF / 2)) 128 "$other" 2
    run refresh $((HALF * 2 / 5)) $((HALF * 7 / 10)) 128 "$other" 2
    run refresh $((HALF * 2 / 5)) $((HALF / 2)) 128 "$other" 0
  done
elif [ "$SET" = refreshsweep ]; then  # refresh's launches at A = 0.4 and C from 0.45 to 0.85 of a partition
  L2=$(echo "$GPU" | grep -q H200 && echo 60 || echo 50)  # MiB
  HALF=$((L2 * MB / 2))
  for twentieths in 9 10 11 12 13 14 15 16 17; do
    run refresh $((HALF * 2 / 5)) $((HALF * twentieths / 20)) 128 4 1
    run refresh $((HALF * 2 / 5)) $((HALF * twentieths / 20)) 128 0 1
  done
  for twentieths in 9 12 15; do run refresh $((HALF * 2 / 5)) $((HALF * twentieths / 20)) 128 4 0; done
elif [ "$SET" = refresh ]; then
  L2=$(echo "$GPU" | grep -q H200 && echo 60 || echo 50)  # MiB
  HALF=$((L2 * MB / 2))
  for other in 4 0 5 1; do
    for reads in 1 0; do
      run refresh $((HALF * 2 / 5)) $((HALF * 3 / 5)) 128 "$other" "$reads"
      run refresh $((HALF / 3)) $((HALF * 8 / 15)) 128 "$other" "$reads"
    done
  done
else
  for other in 4 5 0 1; do
    for fence in 0 1; do
      for rounds in 1 8; do run $((1 * MB)) "$rounds" 128 "$other" "$fence"; done
    done
  done
  for other in 4 0; do
    for fence in 0 1; do run $((4 * MB)) 8 128 "$other" "$fence"; done
  done
fi
echo "done in $SECONDS s"
