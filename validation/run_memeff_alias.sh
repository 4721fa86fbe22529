#!/usr/bin/env bash
# What the memory-efficient backward's D prologue costs in DRAM (memeff_alias_probe.py: each case with its O,
# with O replaced by dO, with O again), in PROCS processes (default 2), process p taking PAD_MIB = 37 x p first
# so that its tensors lie elsewhere:
#   SHAPES="1,8,32768,128" LAYOUT=sdpa TAG=alias8h_sdpa bash validation/run_memeff_alias.sh
# $OUT gets <gpu>_memeff_<TAG>_p<p>.csv (the probe's case lines, then ncu's raw CSV of the same launches in
# order) and _env.txt; the last lines printed are one row per launch (process, case, DRAM MB read, time).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
PREFIX="${G}_memeff_${TAG:-alias}"
ENV="$OUT/${PREFIX}_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
# METRICS replaces the three counters (e.g. the DRAM sweep's list, to see whether ncu's replay passes change them).
METRICS="${METRICS:-dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum}"
NCU_ARGS=(--clock-control base --cache-control all --profile-from-start off --kernel-name regex:fmha_cutlassB
  --metrics "$METRICS" --csv --page raw --print-units base)
echo "ncu ${NCU_ARGS[*]}; SHAPES=${SHAPES:-} LAYOUT=${LAYOUT:-bnhd}, PAD_MIB=37 x process 1-${PROCS:-2}" | tee -a "$ENV"
rc=0
for p in $(seq 1 "${PROCS:-2}"); do
  PAD_MIB=$((37 * p)) "$NCU" "${NCU_ARGS[@]}" python3 validation/memeff_alias_probe.py \
    > "$OUT/${PREFIX}_p$p.csv" 2>&1 || rc=1
done
python3 - "$OUT" "$PREFIX" << 'PY' || rc=1
import csv, glob, io, sys
for path in sorted(glob.glob(f"{sys.argv[1]}/{sys.argv[2]}_p*.csv")):
    lines = open(path).read().splitlines()
    cases = [l[5:] for l in lines if l.startswith("case ")]
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines[start:])))
            if r["ID"].isdigit()] if start is not None else []
    if len(rows) != len(cases):
        sys.exit(f"{path}: {len(cases)} cases, {len(rows)} launches profiled")
    for c, r in zip(cases, rows):
        mb = float(r["dram__bytes_read.sum"].replace(",", "")) / 1e6
        us = float(r["gpu__time_duration.sum"].replace(",", "")) / 1e3
        print(f"{path.rsplit('_', 1)[1][:-4]} {c}: DRAM read {mb:9.1f} MB, {us:9.1f} us")
PY
exit $rc
