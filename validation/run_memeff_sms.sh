#!/usr/bin/env bash
# PyTorch's memory-efficient backward on 16 to 132 SMs (CUDA green contexts; memeff_sms_probe.py), in one call
# on the device machine:
#   bash validation/run_memeff_sms.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_memeff_sms_raw.csv (ncu --page raw, one row per profiled backward, in the PROBE lines'
# order), <gpu>_memeff_sms_run.log (the PROBE lines: case, SMs, the SMs' ids in the order blocks landed) and
# <gpu>_memeff_sms_env.txt. CASES (b,h,n,d,causal ...) and SMS pass through to the script; PASS=fwd
# KERNEL=fmha_cutlassF profiles the forward instead (summarize_memeff_sms.py with PASS=fwd); PASS=sdpa_cudnn
# KERNEL=cudnn_generated and PASS=sdpa_flash KERNEL=flash_fwd those backends' forwards.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/memeffsms.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
PREFIX="${G}_memeff_sms${TAG:-}"  # TAG: a suffix for a repeat run's files
ENV="$OUT/${PREFIX}_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -o "$WORK/probe.so" validation/memeff_residency_read.cu || exit 1
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
METRICS+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
METRICS+=,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum
METRICS+=,launch__grid_size,sm__ctas_launched.sum,sm__ctas_launched.max,gpc__cycles_elapsed.max
# all lookup misses (the home partition's for copies' fetches too): summarize_memeff_sms.py's lts_miss_sectors
METRICS+=,lts__t_sectors_lookup_miss.sum
echo "ncu --cache-control all --clock-control base --metrics $METRICS" | tee -a "$ENV"
"$NCU" --cache-control all --clock-control base --profile-from-start off -k "regex:${KERNEL:-fmha_cutlassB}" \
  --metrics "$METRICS" -o "$WORK/sms" python3 validation/memeff_sms_probe.py "$WORK/probe.so" \
  > "$OUT/${PREFIX}_run.log" 2>&1
rc=$?
"$NCU" -i "$WORK/sms.ncu-rep" --csv --page raw --print-units base > "$OUT/${PREFIX}_raw.csv"
grep -v '^==PROF==' "$OUT/${PREFIX}_run.log" | cut -c1-300
exit $rc
