#!/usr/bin/env bash
# Where PyTorch's memory-efficient backward kernel (fmha_cutlassB) moves its bytes, in one call on the device
# machine:
#   bash validation/run_memeff_bwd_local.sh   (from the repository root; $OUT comes back)
# The kernel at h100_sdpa_cases.csv's d = 128 shapes (and one d = 64 shape, which does not spill), causal
# and not, one profiled launch each after two warm-up passes, under ncu at --clock-control base with the L2
# flushed (as the validation data): L1 sectors by memory space (local = register spills, global) and
# operation, the local and global loads that miss L1, the L1 <-> L2 bytes, the L2's read and write sectors
# and misses, DRAM bytes. So the spill bytes that reach L2 are measured, not solved from the rows' totals,
# and the DRAM reads the model misses at d = 128 can be split between what the L2 misses for reads and what
# it misses for writes. $OUT gets
#   <gpu>_memeff_bwd_local_raw.csv   ncu --page raw, one row per profiled kernel, in the order below
#   <gpu>_memeff_bwd_local_env.txt   GPU, driver, CUDA, ncu, PyTorch; the metrics this ncu lacked
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/memeffbwd.XXXXXX)"
exec > >(tee -a "$OUT/memeff_bwd_local_run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
ENV="$OUT/${G}_memeff_bwd_local_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"

cat > "$WORK/backward.py" << 'PY'
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

SHAPES = [(8, 32, 2048, 128), (1, 16, 8192, 128), (1, 8, 32768, 128), (1, 16, 4096, 64)]
torch.manual_seed(0)
for b, h, n, d in SHAPES:
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3))
    do = torch.randn(b, h, n, d, device="cuda", dtype=torch.float16)
    for causal in (False, True):
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            for _ in range(2):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(do)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            o.backward(do)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        print(f"profiled EFFICIENT_ATTENTION backward {b}x{h}x{n}x{d} causal={int(causal)}", flush=True)
    del q, k, v, do
PY

WANTED="l1tex__t_sectors_pipe_lsu_mem_local_op_ld l1tex__t_sectors_pipe_lsu_mem_local_op_st
l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_miss
l1tex__t_requests_pipe_lsu_mem_local_op_ld l1tex__t_requests_pipe_lsu_mem_local_op_st
l1tex__t_sectors_pipe_lsu_mem_global_op_ld l1tex__t_sectors_pipe_lsu_mem_global_op_st
l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss l1tex__t_sectors_pipe_lsu_mem_global_op_red
l1tex__t_sectors_pipe_lsu_mem_global_op_atom
l1tex__m_xbar2l1tex_read_bytes l1tex__m_l1tex2xbar_write_bytes
lts__t_sectors_srcunit_tex_op_read lts__t_sectors_srcunit_tex_op_write lts__t_sectors_srcunit_tex_op_atom
lts__t_sectors_srcunit_tex_op_red lts__t_sectors_srcunit_tex_op_read_lookup_miss
lts__t_sectors_srcunit_tex_op_write_lookup_miss lts__t_sectors_srcunit_tex_op_read_lookup_hit
dram__bytes_read dram__bytes_write gpu__time_duration"
# Keep only the metrics this ncu knows on this chip (a wrong name would fail the whole pass).
"$NCU" --query-metrics --chip gh100 > "$WORK/metrics.txt" 2>&1
METRICS=""
for m in $WANTED; do
  if grep -q "^$m " "$WORK/metrics.txt"; then METRICS="$METRICS${METRICS:+,}$m.sum"; else
    echo "not in this ncu: $m" | tee -a "$ENV"; fi
done
if [ -z "$METRICS" ]; then  # the query's format not understood: ask for them all
  echo "metric query not understood; asking for every metric" | tee -a "$ENV"
  for m in $WANTED; do METRICS="$METRICS${METRICS:+,}$m.sum"; done
fi
echo "metrics: $METRICS"
timeout 500 "$NCU" --metrics "$METRICS" --profile-from-start off --clock-control base --cache-control all \
  --kernel-name 'regex:fmha_cutlassB' --csv --page raw --print-units base python3 "$WORK/backward.py" \
  > "$WORK/ncu.log" 2>&1 || echo "NCU FAILED ($?)"
grep '^"' "$WORK/ncu.log" > "$OUT/${G}_memeff_bwd_local_raw.csv"
grep -v '^"' "$WORK/ncu.log" | tail -20
wc -l "$OUT/${G}_memeff_bwd_local_raw.csv"
