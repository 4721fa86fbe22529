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
