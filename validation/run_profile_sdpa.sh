#!/usr/bin/env bash
# Where PyTorch's forward kernels spend their time, in one call on the device machine (issue "Kernel time":
# the memory-efficient forward runs 1.5-1.9x longer than the model predicts, FlashAttention-2's within 20%):
#   bash validation/run_profile_sdpa.sh      (from the repository root; $OUT comes back)
# Each backend's forward (FLASH_ATTENTION, EFFICIENT_ATTENTION, CUDNN_ATTENTION) at two of
# h100_sdpa_cases.csv's shapes, not causal, one profiled launch each after two warm-up passes, under
# ncu --set full at --clock-control base with the L2 flushed (as the validation data): instruction counts
# per pipe, issue activity, warp states and scheduler statistics of the attention kernel.
#   <gpu>_sdpa_profile_raw.csv      ncu --page raw, one row per profiled kernel
#   <gpu>_sdpa_profile_details.csv  ncu --page details (sections as printed)
#   <gpu>_sdpa_profile_env.txt      GPU, driver, CUDA, ncu, PyTorch
# OPCODES=1 adds one more ncu pass (OPCODES=only: that pass alone) over the same kernels for the executed instructions per SASS opcode
# (sass__inst_executed_per_opcode, each opcode with its count) into <gpu>_sdpa_opcodes{,_bwd}.csv: the instruction
# mix the issue model's per-element costs can be held against.
# PASS=bwd profiles the backward's main kernels instead (FlashAttention-2's dK/dV kernel, cuDNN's bprop) at
# the same shapes, into <gpu>_sdpa_profile_bwd_{raw,details,env}: where their time goes against the model's.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
WORK="$(mktemp -d /tmp/attnsdpa.XXXXXX)"
PASS="${PASS:-fwd}"
SUFFIX=""
[ "$PASS" = bwd ] && SUFFIX="_bwd"
exec > >(tee -a "$OUT/sdpa_profile${SUFFIX}_run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_sdpa_profile${SUFFIX}_env.txt"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' \
  | tee -a "$OUT/${G}_sdpa_profile${SUFFIX}_env.txt"

cat > "$WORK/forward.py" << 'PY'
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

SHAPES = [(1, 16, 4096, 64), (1, 16, 8192, 128)]
BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
torch.manual_seed(0)
for b, h, n, d in SHAPES:
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    for be in BACKENDS:
        with sdpa_kernel(be):
            for _ in range(2):
                F.scaled_dot_product_attention(q, k, v)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            F.scaled_dot_product_attention(q, k, v)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        print(f"profiled {be.name} {b}x{h}x{n}x{d}", flush=True)
PY

cat > "$WORK/backward.py" << 'PY'
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

SHAPES = [(1, 16, 4096, 64), (1, 16, 8192, 128)]
BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION]
torch.manual_seed(0)
for b, h, n, d in SHAPES:
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3))
    do = torch.randn(b, h, n, d, device="cuda", dtype=torch.float16)
    for be in BACKENDS:
        with sdpa_kernel(be):
            for _ in range(2):
                F.scaled_dot_product_attention(q, k, v).backward(do)
            o = F.scaled_dot_product_attention(q, k, v)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            o.backward(do)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        print(f"profiled {be.name} backward {b}x{h}x{n}x{d}", flush=True)
PY

KERNELS='regex:flash_fwd|fmha_cutlassF|cudnn_generated'
SCRIPT="$WORK/forward.py"
if [ "$PASS" = bwd ]; then
  KERNELS='regex:flash_bwd_dq_dk_dv|flash_bprop'
  SCRIPT="$WORK/backward.py"
fi
[ "${OPCODES:-0}" = only ] || {
echo "=== ncu --set full ($NCU), $PASS"
timeout 500 "$NCU" --set full --profile-from-start off --clock-control base --cache-control all \
  --kernel-name "$KERNELS" -o "$WORK/sdpa" python3 "$SCRIPT" || echo "NCU FAILED ($?)"
for page in raw details; do
  "$NCU" --import "$WORK/sdpa.ncu-rep" --print-kernel-base demangled --csv --page "$page" \
    > "$OUT/${G}_sdpa_profile${SUFFIX}_$page.csv" || echo "NCU IMPORT $page FAILED"
  wc -l "$OUT/${G}_sdpa_profile${SUFFIX}_$page.csv"
done
}
if [ "${OPCODES:-0}" != 0 ]; then
  echo "=== ncu opcodes, $PASS"
  timeout 300 "$NCU" --metrics sass__inst_executed_per_opcode --print-metric-instances details \
    --profile-from-start off --clock-control base --cache-control all --kernel-name "$KERNELS" \
    --csv --page raw --print-units base python3 "$SCRIPT" 2>&1 | grep '^"' > "$OUT/${G}_sdpa_opcodes${SUFFIX}.csv" \
    || echo "NCU OPCODES FAILED"
  wc -l "$OUT/${G}_sdpa_opcodes${SUFFIX}.csv"
fi
