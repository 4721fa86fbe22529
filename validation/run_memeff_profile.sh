#!/usr/bin/env bash
# Where PyTorch's memory-efficient backward spends a step, in one call on the device machine:
#   bash validation/run_memeff_profile.sh      (from the repository root; $OUT comes back)
# The model's step is 0.69 of the GPU's on 16 SMs and its lock (an atomicCAS spin, two __threadfence, an
# atomicAdd counter, a release store per dQ tile) is not in the program; this profiles the backward's one
# attention kernel (the same call as memeff_sms_probe.py: torch.ops.aten._efficient_attention_backward)
# under ncu --set full with SASS-level source counters (stall samples per instruction), L2 flushed, base
# clocks, one launch per case and SM count (SMS: 0 for the whole chip, else a green context of that many).
# PASS=fwd profiles the forward's kernel (fmha_cutlassF) instead, into <gpu>_memeff_fwd_profile*;
# PASS=sdpa_flash FlashAttention-2's forward (flash_fwd) under SDPA, into <gpu>_fa2_fwd_profile*;
# PASS=sdpa_flash_bwd its backward's main kernel (flash_bwd_dq_dk_dv), into <gpu>_fa2_bwd_profile*. TAG is
# appended to the file names.
#   <gpu>_memeff_profile.tar.gz   per case: ncu --page raw, --page details, --page source --print-source sass
#   <gpu>_memeff_profile_env.txt  GPU, driver, CUDA, ncu, PyTorch
#   <gpu>_memeff_profile_run.log  the probe's lines (the SMs each launch had)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/memeffprof.XXXXXX)"
PROF="$WORK/profile"
mkdir -p "$PROF"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
PASS="${PASS:-bwd}"
case "$PASS" in
  fwd) NAME="${G}_memeff_fwd_profile" KERNEL=fmha_cutlassF ;;
  sdpa_flash) NAME="${G}_fa2_fwd_profile" KERNEL=flash_fwd ;;
  sdpa_flash_bwd) NAME="${G}_fa2_bwd_profile" KERNEL=flash_bwd_dq_dk_dv ;;
  *) NAME="${G}_memeff_profile" KERNEL=fmha_cutlassB ;;
esac
NAME="$NAME${TAG:-}"
export PASS
ENV="$OUT/${NAME}_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -o "$WORK/probe.so" validation/memeff_residency_read.cu || exit 1
echo "ncu --set full --import-source yes --cache-control all --clock-control base" | tee -a "$ENV"
LOG="$OUT/${NAME}_run.log"
: > "$LOG"
for spec in ${CASES:-1,16,8192,128,0 1,16,4096,64,0}; do
  for sms in ${SMS:-0 16}; do
    tag="$(echo "${spec}_s$sms" | tr ',' 'x')"
    t0=$SECONDS
    CASES="$spec" SMS="$sms" timeout 240 "$NCU" --set full --import-source yes --cache-control all \
      --clock-control base --profile-from-start off -k "regex:$KERNEL" -f -o "$WORK/$tag" \
      python3 validation/memeff_sms_probe.py "$WORK/probe.so" > "$WORK/$tag.stdout" 2>&1 ||
      { echo "ncu FAILED: $tag"; tail -n 15 "$WORK/$tag.stdout"; continue; }
    grep '^PROBE' "$WORK/$tag.stdout" | tee -a "$LOG" | cut -c1-120
    "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page raw --print-units base > "$PROF/${tag}_raw.csv" 2>&1
    "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page details --print-units base > "$PROF/${tag}_details.csv" 2>&1
    "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page source --print-source sass > "$PROF/${tag}_source.csv" 2>&1 ||
      echo "(no source page)"
    gzip -f "$PROF/${tag}_source.csv"
    echo "$tag: profiled in $((SECONDS - t0)) s"
  done
done
# One archive: the device call returns a limited number of files.
tar czf "$OUT/$NAME.tar.gz" -C "$WORK" profile
echo "done in ${SECONDS}s; files in $OUT"
rm -rf "$WORK"
