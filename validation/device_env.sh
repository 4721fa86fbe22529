# Sourced by the validation/run_*.sh scripts on the device machine: puts CUDA on PATH, finds ncu (NCU),
# names the GPU (GPU, and G: h100, h200 or gpu for file names), and defines write_env FILE, which writes the
# provenance every data file goes with (GPU, its UUID and bus, driver, CUDA, ncu, date) and prints it.
export PATH="$PATH:/usr/local/cuda/bin"
NCU="${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2> /dev/null | head -n1)}"
GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
case "$GPU" in *H100*) G=h100 ;; *H200*) G=h200 ;; *) G=gpu ;; esac
write_env() {
  {
    echo "gpu: $GPU"
    echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)"
    echo "cuda (nvcc): $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    echo "ncu: $("$NCU" --version | sed -n 's/^Version \([^ ]*\).*/\1/p')"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    # Which physical GPU: the SMs' attachment to the L2 partitions differs between GPUs of one kind
    # (docs/chip.md, "Sixteen SMs of a green context").
    echo "gpu uuid: $(nvidia-smi --query-gpu=uuid,pci.bus_id --format=csv,noheader | head -n1)"
  } > "$1"
  cat "$1"
}
