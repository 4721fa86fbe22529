# Runs validation/l2_probe.cu (built as a shared library whose main is l2_probe_main) in a CUDA green context
# of SMS SMs, so that its blocks run on those SMs only (the first 16 of an H200's green contexts are all on
# SM 128's L2 partition: memeff_sms_probe.py). Arguments as l2_probe's; prints its RESULT line with sms=S.
#   SMS=16 python3 validation/l2_probe_green.py LIB MODE BYTES PASSES [BLOCKS]
import ctypes, os, sys
import torch

import green_context

lib = ctypes.CDLL(sys.argv[1])
sms = int(os.environ.get("SMS", "16"))
ctx = green_context.create(sms)
ctx.set_context()
if os.environ.get("SMID_LIB"):  # which SMs the context has, in the order blocks land (memeff_residency_read.cu)
    smid = ctypes.CDLL(os.environ["SMID_LIB"])
    smid.launch_smids.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    out = torch.full((4 * 132,), -1, dtype=torch.int32, device="cuda")
    assert smid.launch_smids(out.numel(), 150 << 10, out.data_ptr()) == 0
    torch.cuda.synchronize()
    seen = list(dict.fromkeys(out.tolist()))
    print("SMIDS", len(seen), " ".join(map(str, seen)), flush=True)
args = [b"l2_probe"] + [a.encode() for a in sys.argv[2:]]
argv = (ctypes.c_char_p * len(args))(*args)
main = getattr(lib, "_Z13l2_probe_mainiPPc")  # main renamed by -Dmain=l2_probe_main, C++ linkage
main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
sys.stdout.flush()
rc = main(len(args), argv)
ctx.pop_context()
print(f"GREEN sms={sms} rc={rc}", flush=True)
sys.exit(rc)
