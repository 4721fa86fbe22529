# A CUDA green context of `sms` SMs through PyTorch (torch.cuda.green_contexts), for the probes that confine a
# launch to fewer SMs (memeff_sms_probe.py, memeff_residency_probe.py, l2_probe_green.py). The signature of
# GreenContext.create moved between releases: positional in 2.10, keyword-only later.
import torch


def create(sms):
    green = torch.cuda.green_contexts.GreenContext
    try:
        return green.create(num_sms=sms, device_id=0)
    except TypeError:
        return green.create(sms, 0)


def smids(lib, blocks):
    """SMs of the current context in the order a block scheduler fills them (one block per SM at a time):
    lib's launch_smids (memeff_residency_read.cu) writes each block's %smid; the first distinct ones."""
    out = torch.full((blocks,), -1, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    assert lib.launch_smids(blocks, 150 << 10, out.data_ptr()) == 0
    torch.cuda.synchronize()
    seen = []
    for s in out.tolist():
        if s not in seen:
            seen.append(s)
    return seen
