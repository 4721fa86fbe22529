#!/usr/bin/env bash
# L2 capacity and replacement probe (validation/l2_probe.cu), in one call on the device machine:
#   bash validation/run_l2_probe.sh            (from the repository root; $OUT comes back)
#   SET=extra bash validation/run_l2_probe.sh  (writers, two blocks per SM, and per-block pass timestamps)
#   SET=waves bash validation/run_l2_probe.sh  (in-step readers over 1 to 8 waves, with timestamps)
#   SET=samples bash validation/run_l2_probe.sh  (out-of-step and in-step readers, 32 timestamps a pass)
#   SET=scatter bash validation/run_l2_probe.sh  (one SM reading scattered lines: the associativity)
#   SET=dirty bash validation/run_l2_probe.sh (dirty footprints rewritten by one SM, by every SM, by every
#                                             SM in turn; dirty lines against clean ones under a stream)
#   SET=dirty2 bash validation/run_l2_probe.sh (the same, a stream read twice, one SM, three rewrites)
#   SET=rmwcap bash validation/run_l2_probe.sh (every SM rewriting one buffer in turn from 12 to 48 MiB, beside
#                                             the same buffer read: where rewritten lines start to reach DRAM)
#   SET=rmwhalf bash validation/run_l2_probe.sh (1, 4 or 12 groups of SMs, each reading one half of its part of
#                                             the buffer and rewriting the other in turn, 16 to 48 MiB:
#                                             the memory-efficient backward's Q_i, dO_i and dQ workspace)
#   SET=rmwknee bash validation/run_l2_probe.sh (rmwhalf three times at 20 to 26 MiB, just below where the
#                                             buffer and its copies fill the L2, and at 24 MiB from 1 MiB
#                                             into the allocation, beside spread: whether a nearly full L2
#                                             loses lines, or only 24 MiB's page pair from the start)
#   SET=rmwlock bash validation/run_l2_probe.sh (rmwhalf beside the same rewrites under a lock per chunk and
#                                             under the lock's fences alone, 16 to 40 MiB, 1 or 12 groups:
#                                             whether the memory-efficient backward's AtomicLock costs DRAM
#                                             traffic that plain rewrites do not; the probe's SASS in $OUT)
#   SET=rmwfence bash validation/run_l2_probe.sh (the rewrites with plain or strong accesses, fenced or not:
#                                             which of the two makes rmwlock lose more past the knee)
#   SET=fences bash validation/run_l2_probe.sh (one SM reads a buffer with a fence after every chunk, or
#                                             while 7 other SMs fence: whether fences drop the copies one
#                                             L2 partition keeps of the other's lines)
#   SET=fenceasync bash validation/run_l2_probe.sh (fenced reads through ld.global.cg, cp.async (the
#                                             memory-efficient backward's tile loads) and weak ld.global:
#                                             which loads a fence makes check their copies)
#   SET=fencerate bash validation/run_l2_probe.sh (rfence with a fence every 1 to 64 chunks, 2 to 132 SMs;
#                                             rfenceother beside 1 to 32 fencing SMs)
#   SET=dirty3 bash validation/run_l2_probe.sh (wthenread/rthenread at 40 and 48 MiB from 2, 8, 33, 66 SMs)
#   SET=pair bash validation/run_l2_probe.sh (SM 128 beside each other SM: which partition each is attached to)
#   SET=pairs bash validation/run_l2_probe.sh (the same for the pairs PAIRS="A,B ..." names)
#   SET=retouch bash validation/run_l2_probe.sh (one SM re-reads part of its data between new parts: how
#                                             much a hit protects a line, LRU against pseudo-LRU or FIFO)
#   SET=stale bash validation/run_l2_probe.sh (a part read 1 to 8 times, then never again, while a new
#                                             buffer is read twice: whether the dead part goes first, as
#                                             under LRU, or its past hits protect it)
#   SET=between bash validation/run_l2_probe.sh (one SM reads a part, stores or loads a buffer after it,
#                                             reads the part again: whether stores take room in the
#                                             writer's partition for lines homed in the other)
#   SET=heads bash validation/run_l2_probe.sh (one SM reads windows of every head's K and V as the kernels
#                                             lay them out, beside contiguous buffers of the same size:
#                                             whether the sets fill as evenly)
#   SET=strides bash validation/run_l2_probe.sh (the same with 2 MiB windows at head strides of 2 to 32 MiB:
#                                             which address bits decide how unevenly they fill; STRIDES:
#                                             other strides in MiB)
#   SET=copies bash validation/run_l2_probe.sh (17 to 129 copies of 64 KiB at power-of-two strides: over how
#                                             many set groups each address bit spreads lines)
#   SET=offsets bash validation/run_l2_probe.sh (one SM reads 28 and 29 MiB three times, the buffer starting
#                                             0 to 7 MiB into its allocation: whether where the 2 and 4 MiB
#                                             pages begin decides how evenly it fills the sets; OFFSET_SIZES:
#                                             other sizes in MiB, e.g. "22 24" on an H100)
#   SET=pages bash validation/run_l2_probe.sh (one SM reads 12 or 14 pages of 2 MiB a stride apart in one
#                                             allocation, and 28 MiB from 8-15 MiB into its allocation)
#   SET=lrc bash validation/run_l2_probe.sh   (every read mode with the L2 request coalescer's counters:
#                                             how many requested sectors reached the L2 after merging)
#   SET=lrcblocks bash validation/run_l2_probe.sh (the coalescer's counters for 2 to 132 in-step readers,
#                                             and for readers started STAGGER_NS apart: how many requests
#                                             it merges and for how long a request stays open)
#   SET=lrcstagger bash validation/run_l2_probe.sh (four readers STAGGER_NS apart, two on each partition)
# Every launch once under ncu --cache-control all --clock-control base. $OUT gets <gpu>_l2_probe.csv (one
# row per launch: mode, bytes, passes, blocks, then the counters), <gpu>_l2_probe_env.txt and run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/l2probe.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_l2_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/l2_probe" validation/l2_probe.cu || { echo "BUILD FAILED"; exit 1; }
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum,gpu__time_duration.sum
SET="${SET:-reads}"
# Hopper's L2 request coalescer (LRC) sits between the SMs and the L2 slices and merges reads of one sector
# that arrive together: sectors in from the L2 (lts2lrc), out towards the SMs (lrc2xbar), out thanks to a
# merge (coalescing_achieved), and into the GPCs (xbar2gpc).
LRC_METRICS=lrc__lts2lrc_sectors_op_read.sum,lrc__lrc2xbar_sectors_op_read.sum,lrc__lrc2xbar_sectors_op_read_coalescing_achieved.sum,lrc__xbar2gpc_sectors_op_read.sum
[ "$SET" = lrc ] || [ "$SET" = lrcblocks ] || [ "$SET" = lrcstagger ] && METRICS="$METRICS,$LRC_METRICS"
export LRC_METRICS SET
CSV="$OUT/${G}_l2_probe$([ "$SET" = reads ] || echo "_$SET").csv"
HEADER="mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,l2_read_sectors,lts_tex_hit_sectors,lts_tex_miss_sectors,lts_fabric_sectors,lts_hit_sectors,lts_miss_sectors,time_ns"
[ "$SET" = lrc ] || [ "$SET" = lrcblocks ] || [ "$SET" = lrcstagger ] && HEADER="$HEADER,lrc_lts2lrc_read_sectors,lrc_lrc2xbar_read_sectors,lrc_coalesced_read_sectors,lrc_xbar2gpc_read_sectors"
[ "$SET" = lrcblocks ] || [ "$SET" = lrcstagger ] && HEADER="$HEADER,stagger_ns"
[ "$SET" = offsets ] || [ "$SET" = pages ] && HEADER="$HEADER,offset_bytes,repeat"
[ "$SET" = rmwhalf ] || [ "$SET" = rmwlock ] || [ "$SET" = rmwfence ] && HEADER="$HEADER,groups"
[ "$SET" = rmwknee ] && HEADER="$HEADER,offset_bytes,groups"
[ "$SET" = fenceasync ] || [ "$SET" = fencerate ] && HEADER="$HEADER,fence_every"
echo "$HEADER" > "$CSV"
MB=$((1 << 20))
run() {  # mode bytes passes [blocks]
  local log="$WORK/ncu.log"
  timeout 120 "$NCU" --metrics "$METRICS" --cache-control all --clock-control base -k "regex:l2_probe_kernel|scatter_kernel|pair_kernel|heads_kernel|copies_kernel" --csv \
    --page raw --print-units base "$WORK/l2_probe" "$@" > "$log" 2>&1 || { echo "FAILED $*"; tail -5 "$log"; return; }
  python3 - "$log" "$CSV" "$@" << 'EOF'
import csv, io, os, sys
log, out, mode, nbytes, passes = sys.argv[1:6]
text = open(log).read()
result = [l for l in text.splitlines() if l.startswith("RESULT")]
rows = [l for l in text.splitlines() if l.startswith('"')]
table = list(csv.DictReader(io.StringIO("\n".join(rows))))
row = [r for r in table if r.get("Kernel Name", "").startswith(("l2_probe_kernel", "scatter_kernel", "pair_kernel", "heads_kernel", "copies_kernel"))][0]
fields = dict(kv.split("=") for kv in result[0].split()[1:])
names = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
         "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
         "lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_lookup_hit.sum",
         "lts__t_sectors_lookup_miss.sum", "gpu__time_duration.sum"]
if os.environ.get("SET") in ("lrc", "lrcblocks", "lrcstagger"):
    names += os.environ["LRC_METRICS"].split(",")
values = [str(int(float(row[n].replace(",", "")))) for n in names]
line = [fields["mode"], fields["bytes"], fields["passes"], fields["blocks"]] + values
if os.environ.get("SET") in ("offsets", "pages"):
    line += [fields.get("offset", "0"), os.environ.get("REPEAT", "1")]
if os.environ.get("SET") == "rmwknee":
    line += [fields.get("offset", "0")]
if os.environ.get("SET") in ("rmwhalf", "rmwknee", "rmwlock", "rmwfence"):
    line += [fields.get("groups", "1")]
if os.environ.get("SET") in ("fenceasync", "fencerate"):
    line += [fields.get("fence_every", "1")]
if os.environ.get("SET") in ("lrcblocks", "lrcstagger"):
    line += [fields.get("stagger_ns", "0")]
open(out, "a").write(",".join(line) + "\n")
print(" ".join(line))
EOF
}
if [ "$SET" = waves ]; then
  # Many waves of in-step readers (FlashAttention's K/V at long N): 1 to 8 waves of 264 blocks (2 per SM).
  for blocks in 264 528 1056 2112; do run shared $((32 * MB)) 1 "$blocks"; done
  for blocks in 528 2112; do run spread $((32 * MB)) 1 "$blocks"; done
  for args in "shared $((32 * MB)) 1 2112" "shared $((16 * MB)) 1 2112"; do
    # shellcheck disable=SC2086
    "$WORK/l2_probe" $args > /dev/null
    name="$(echo "$args" | awk '{printf "%s_%dMiB_x%d_%db", $1, $2 / 1048576, $3, $4}')"
    # shellcheck disable=SC2086
    TIMES="$OUT/${G}_l2_probe_times_$name.csv" "$WORK/l2_probe" $args
  done
elif [ "$SET" = samples ]; then
  # Whether out-of-step readers bunch up: every block's timer at 32 points of every pass, taken in the launch
  # that ncu measures (caches flushed, base clocks), so each file goes with its row of the CSV.
  for args in "spread $((32 * MB)) 3 132" "spread $((64 * MB)) 3 132" "shared $((32 * MB)) 3 132" \
    "spread $((40 * MB)) 3 132"; do
    # shellcheck disable=SC2086
    name="$(echo "$args" | awk '{printf "%s_%dMiB_x%d_%db", $1, $2 / 1048576, $3, $4}')"
    # shellcheck disable=SC2086
    SAMPLES=32 TIMES="$OUT/${G}_l2_probe_samples_$name.csv" run $args
  done
elif [ "$SET" = scatter ]; then
  # Footprints around one partition's 25 MiB (a single SM's reads all land in its near partition), and
  # the contiguous single-SM reads at the same sizes beside them.
  for s in 8 12 16 18 20 22 24 28 32 40; do run scatter $((s * MB)) 3; done
  for s in 12 18 22; do run single $((s * MB)) 3; done
elif [ "$SET" = dirty ]; then
  # When the L2 writes a dirty line back, and whether written lines leave sooner than read ones.
  for s in 2 4 8 16 24; do run wprivate $((s * MB)) 3; done
  for s in 2 4 8 16; do run wsingle $((s * MB)) 3; done
  for s in 2 4 8 16 24 32; do run rmw $((s * MB)) 3; done
  for s in 2 8 16; do run rmw $((s * MB)) 3 1; done
  for s in 1 2 4 8 16; do run rmwspread $((s * MB)) 1; done
  for s in 16 32 40 48 56 64; do run wthenread $((s * MB)) 1; run rthenread $((s * MB)) 1; done
elif [ "$SET" = dirty2 ]; then
  # Follow-ups: a stream read twice past written lines, one SM alone, and every SM rewriting in turn 3 times.
  for s in 32 40 48; do run wthenread $((s * MB)) 2; run rthenread $((s * MB)) 2; done
  for s in 8 16 24 32; do run wthenread $((s * MB)) 1 1; run rthenread $((s * MB)) 1 1; done
  for s in 1 4 16; do run rmwspread $((s * MB)) 3; done
elif [ "$SET" = rmwcap ]; then
  # Every SM rewriting one buffer in turn (the memory-efficient backward's dQ workspace) up to and past the
  # L2's dirty share and capacity, beside the same buffer only read (spread) and each SM's own slice rewritten.
  for s in 12 16 20 24 28 32 40 48; do run rmwspread $((s * MB)) 1; run spread $((s * MB)) 1; done
  for s in 16 20 24 32; do run rmwspread $((s * MB)) 3; done
  for s in 20 24 28 32 40; do run rmw $((s * MB)) 1; done
elif [ "$SET" = rmwlock ]; then
  # The same rewrites plain, under the kernel's lock, and under its fences alone; the memory instructions
  # the compiler made of them, to hold against the memory-efficient backward's.
  cuobjdump -sass "$WORK/l2_probe" | grep -E "ATOM|MEMBAR|CCTL|NANOSLEEP|STG.E.STRONG.GPU " | sort | uniq -c \
    > "$OUT/${G}_l2_probe_rmwlock_sass.txt"
  for g in 1 12; do for s in 16 24 28 32 40; do for m in rmwhalf rmwlock rmwfence; do
    GROUP_COUNT=$g run $m $((s * MB)) 1
  done; done; done
  for m in rmwhalf rmwlock rmwfence; do GROUP_COUNT=1 run $m $((24 * MB)) 3; done
elif [ "$SET" = fences ]; then
  for s in 8 16 24 32; do run single $((s * MB)) 3; run rfence $((s * MB)) 3; run rfenceother $((s * MB)) 3; done
  for s in 16 32; do run shared $((s * MB)) 1; run rfence $((s * MB)) 1 132; done
elif [ "$SET" = fenceasync ]; then
  # The fenced reads as ld.global.cg (LDG), as cp.async (the memory-efficient backward's tile loads) and as
  # weak ld.global, beside no fence; the same loads while 7 other SMs fence; fewer fences (one every 4, 16
  # or 64 chunks of 16 KiB); 132 SMs reading in step with fences. And the load instructions they compiled to.
  cuobjdump -sass "$WORK/l2_probe" | grep -oE "(LDG|LDGSTS|LD|STG|MEMBAR|CCTL)(\.[A-Z0-9_]+)*" | sort | uniq -c \
    > "$OUT/${G}_l2_probe_fenceasync_sass.txt"
  for s in 8 16; do
    for m in single rfence rfenceasync rfenceweak rfenceother rfenceotherasync rfenceotherweak; do
      run $m $((s * MB)) 3
    done
  done
  for f in 4 16 64; do for m in rfence rfenceasync rfenceweak; do FENCE_EVERY=$f run $m $((16 * MB)) 3; done; done
  for m in shared rfence rfenceasync rfenceweak; do run $m $((16 * MB)) 1 132; done
elif [ "$SET" = fencerate ]; then
  # How a fence's checks scale: one SM with a fence every 1 to 64 chunks; 2 to 132 SMs in step with a fence
  # every chunk; one reader beside 1 to 32 fencing SMs.
  for f in 1 2 4 8 16 64; do FENCE_EVERY=$f run rfence $((16 * MB)) 3; done
  for blocks in 2 8 33 132; do run shared $((16 * MB)) 1 "$blocks"; run rfence $((16 * MB)) 1 "$blocks"; done
  for s in 8 16; do for blocks in 2 8 33; do run rfenceother $((s * MB)) 3 "$blocks"; done; done
elif [ "$SET" = rmwfence ]; then
  for g in 1 12; do for s in 16 28 32 40; do for m in rmwhalf rmwplain rmwfence rmwcgfence; do
    GROUP_COUNT=$g run $m $((s * MB)) 1
  done; done; done
elif [ "$SET" = rmwhalf ]; then
  # Per group, a half read and a half rewritten by every block of the group out of step (the memory-efficient
  # backward: 1 group as at 1 x 8 x 32,768, 12 groups of 11 SMs as the 8 x 32 x 2,048 rows' heads in flight).
  for s in 16 20 24 28 32 40 48; do GROUP_COUNT=1 run rmwhalf $((s * MB)) 1; done
  for g in 4 12; do for s in 16 24 32 40 48; do GROUP_COUNT=$g run rmwhalf $((s * MB)) 1; done; done
  for s in 24 32; do GROUP_COUNT=1 run rmwhalf $((s * MB)) 3; done
  run rmwspread $((28 * MB)) 1; run spread $((28 * MB)) 1
elif [ "$SET" = rmwknee ]; then
  # Just below the knee: three passes, 1, 4 and 12 groups; 24 MiB from the allocation's start is where a
  # pair of the H100's pages share sets, so those rows again from 1 MiB in; the buffer only read (spread).
  for s in 20 22 24 26; do for g in 1 4 12; do GROUP_COUNT=$g run rmwhalf $((s * MB)) 3; done; done
  for g in 1 4 12; do OFFSET_BYTES=$MB GROUP_COUNT=$g run rmwhalf $((24 * MB)) 3; done
  for s in 20 22 24 26; do run spread $((s * MB)) 3; done
  OFFSET_BYTES=$MB run spread $((24 * MB)) 3
elif [ "$SET" = dirty3 ]; then
  # How many SMs the written lines' protection needs: the 132-block rows of SET=dirty at 2 to 66 blocks.
  for s in 40 48; do
    for blocks in 2 8 33 66; do run wthenread $((s * MB)) 1 "$blocks"; run rthenread $((s * MB)) 1 "$blocks"; done
  done
elif [ "$SET" = pair ]; then
  # Which L2 partition each SM is attached to: SM 128 and one other SM each read their own 20 MiB three
  # times; the same partition: about 80 MiB of DRAM reads, different ones: about 120 (docs/chip.md).
  for sm in $(seq 0 131); do
    [ "$sm" = 128 ] && continue
    PAIR="128,$sm" run pair $((40 * MB)) 3
  done
elif [ "$SET" = pairs ]; then
  # The pair probe for chosen pairs (PAIRS="A,B C,D ..."): whether two SMs that each share SM 128's partition
  # share one with each other (a green context's SMs 0 and 2 read 40 MiB as if on two: docs/chip.md).
  for pair in ${PAIRS:-0,2 0,1 0,16 2,18 0,4 4,6 128,0 128,2 128,4}; do PAIR="$pair" run pair $((40 * MB)) 3; done
elif [ "$SET" = retouch ]; then
  # Part 0 read again between new parts: LRU keeps it below a partition's capacity, a pseudo-LRU or FIFO
  # loses it. Parts of 2 to 16 MiB, 8 rounds; 2 rounds at three sizes; single-SM streams for the capacity.
  for s in 2 3 4 5 6 7 8 9 10 11 12 14 16; do run retouch $((s * MB)) 8; done
  for s in 4 6 8; do run retouch $((s * MB)) 2; done
  for s in 16 20 22 24 26 28 30 32; do run single $((s * MB)) 3; done
elif [ "$SET" = stale ]; then
  # Hot part A (MiB) read H times, then a buffer B read twice, by one SM; a partition holds 28-30 MiB of
  # one SM's data. LRU: A + B reads wherever B fits. Then every SM in step (132 blocks), and B alone.
  for ahb in 12,1,20 12,2,20 12,4,20 12,8,20 20,1,12 20,8,12 16,1,16 16,2,16 16,8,16 8,1,24 8,8,24 24,1,8 \
    24,8,8; do
    IFS=, read -r a h b <<< "$ahb"
    HOT_BYTES=$((a * MB)) HOT_PASSES=$h run stale $((b * MB)) 2
  done
  HOT_BYTES=$((12 * MB)) HOT_PASSES=8 run stale $((20 * MB)) 3
  for ahb in 12,1,20 12,8,20 16,8,16; do
    IFS=, read -r a h b <<< "$ahb"
    HOT_BYTES=$((a * MB)) HOT_PASSES=$h run stale $((b * MB)) 2 132
  done
  for s in 20 24; do run single $((s * MB)) 2; done
elif [ "$SET" = between ]; then
  # A 12 MiB part, then W MiB stored (or loaded) by the same SM, then the part again; a partition holds
  # 28-30 MiB of one SM's data. Stores kept at home only: the part stays until W/2 + 12 MiB no longer
  # fits; stores taking room in the writer's partition too: until W + 12, as the loaded twin.
  for w in 8 16 20 24 28 32 40 48; do HOT_BYTES=$((12 * MB)) HOT_PASSES=1 run wbetween $((w * MB)) 1; done
  for w in 8 16 20 24 32; do HOT_BYTES=$((12 * MB)) HOT_PASSES=1 run rbetween $((w * MB)) 1; done
  for w in 16 24; do HOT_BYTES=$((12 * MB)) HOT_PASSES=1 run wbetween $((w * MB)) 2; done
  for w in 16 24 32; do HOT_BYTES=$((12 * MB)) HOT_PASSES=1 run wbetween $((w * MB)) 1 132; done
elif [ "$SET" = offsets ]; then
  # The model deals its sets in regions of 4 MiB: a buffer that starts 2 MiB into one fills them unevenly
  # (28 MiB from 2 MiB reads 1.14 times where from 0 it reads once). Each launch is its own process and
  # allocation; REPEAT tells the second round of the same offsets apart.
  # OFFSET_SIZES (MiB, default 28): the buffers read from every offset, twice; without it 29 and 26 MiB too.
  for size in ${OFFSET_SIZES:-28}; do
    for repeat in 1 2; do
      for off in 0 1 2 3 4 5 6 7; do REPEAT=$repeat OFFSET_BYTES=$((off * MB)) run single $((size * MB)) 3; done
    done
  done
  if [ -z "${OFFSET_SIZES:-}" ]; then
    for off in 0 1 2 3; do OFFSET_BYTES=$((off * MB)) run single $((29 * MB)) 3; done
    for off in 0 2; do OFFSET_BYTES=$((off * MB)) run single $((26 * MB)) 3; done
  fi
elif [ "$SET" = heads ]; then
  # The knee of one SM's reads: a contiguous buffer, then windows of 6, 16 and 2 heads' K and V (8 MiB heads,
  # the 32,768-key d = 128 layout of the two-blocks rows).
  for s in 24 26 27 28 29 30 31 32 34 36; do run single $((s * MB)) 3; done
  for s in 24 26 27 28 29 30 31 32 34 36; do run heads $((s * MB)) 3 6; done
  for s in 24 28 30 32 36; do run heads $((s * MB)) 3 16; done
  for s in 24 28 30 32; do run heads $((s * MB)) 3 2; done
elif [ "$SET" = strides ]; then
  # 2 MiB windows (one 2 MiB page per head and tensor) at head strides of 2 (contiguous) to 32 MiB, 24 to
  # 32 MiB in all.
  for stride in ${STRIDES:-2 4 6 8 10 12 16 24 32}; do
    for heads in 6 7 8; do HEAD_BYTES=$((stride * MB)) run heads $((4 * heads * MB)) 3 "$heads"; done
  done
elif [ "$SET" = copies ]; then
  # 16 copies fit one group of sets (16 ways): 17, 33, 65 and 129 copies overflow 1, 2, 4 and 8 groups.
  for shift in $(seq 16 29); do
    for copies in 17 33 65 129; do STRIDE=$((1 << shift)) COPIES=$copies run copies $((64 * 1024)) 3; done
  done
elif [ "$SET" = pages ]; then
  # Pages a stride apart in one allocation: 12 and 14 windows of 2 MiB (24 and 28 MiB), 2 to 32 MiB apart
  # (the heads probe's windows without its four allocations), then 28 MiB from 8 to 15 MiB into its
  # allocation (SET=offsets went to 7): how often a run of 14 pages holds two that collide.
  for stride in 2 4 6 8 10 12 14 16 20 24 32; do
    for copies in 12 14; do STRIDE=$((stride * MB)) COPIES=$copies run copies $((2 * MB)) 3; done
  done
  for off in 8 9 10 11 12 13 14 15; do OFFSET_BYTES=$((off * MB)) run single $((28 * MB)) 3; done
elif [ "$SET" = lrcblocks ]; then
  # In step: 2 to 132 readers of one buffer that fits (8 MiB) and one that does not (32 MiB): how many of
  # the SMs' requests for a sector the coalescer merges as readers are added.
  for s in 8 32; do
    for b in 2 4 8 16 33 66 132; do run shared $((s * MB)) 3 "$b"; done
  done
  # Two readers STAGGER_NS apart: how long a request stays open for another to ride on it.
  for s in 8 32; do
    for ns in 0 50 100 200 400 800 1600 3200; do STAGGER_NS=$ns run shared $((s * MB)) 3 2; done
  done
  # 132 readers each STAGGER_NS after the one before (readers 0.1 to 26 us apart in all).
  for ns in 1 5 20 50 200; do STAGGER_NS=$ns run shared $((8 * MB)) 3 132; done
elif [ "$SET" = lrcstagger ]; then
  # Four readers, each STAGGER_NS after the one before: two on each partition (two readers, one on each,
  # never merge: SET=lrcblocks), so each partition's pair starts 2 x STAGGER_NS apart or more.
  for s in 8 32; do
    for ns in 0 100 400 1600 6400 25600 102400; do STAGGER_NS=$ns run shared $((s * MB)) 3 4; done
  done
elif [ "$SET" = lrc ]; then
  for mode in spread shared single private; do
    for s in 8 16 24 32 40 48 64; do run "$mode" $((s * MB)) 3; done
  done
elif [ "$SET" = reads ]; then
  for s in 8 16 20 24 28 32 36 40 48 64; do run single $((s * MB)) 3; done
  for s in 8 16 24 32 40 48 64; do run private $((s * MB)) 3; done
  for s in 8 16 20 24 28 32 36 40 48 64; do run shared $((s * MB)) 3; done
  for s in 8 16 20 24 28 32 36 40 48 64; do run spread $((s * MB)) 3; done
  for s in 16 32 48; do run shared $((s * MB)) 3 396; done
else
  for s in 8 16 24 32 48 64 128; do run wsingle $((s * MB)) 1; done
  for s in 8 16 24 32 40 48 64 128; do run wprivate $((s * MB)) 1; done
  for s in 16 32 48; do run shared $((s * MB)) 3 264; done
  # Timestamps, without ncu (caches not flushed; one warm-up launch of the same size first).
  for args in "shared $((32 * MB)) 3 132" "shared $((32 * MB)) 3 264" "shared $((32 * MB)) 3 396" "shared $((48 * MB)) 3 264"; do
    # shellcheck disable=SC2086
    "$WORK/l2_probe" $args > /dev/null
    name="$(echo "$args" | awk '{printf "%s_%dMiB_x%d_%db", $1, $2 / 1048576, $3, $4}')"
    # shellcheck disable=SC2086
    TIMES="$OUT/${G}_l2_probe_times_$name.csv" "$WORK/l2_probe" $args
  done
fi
echo "done in $SECONDS s"
