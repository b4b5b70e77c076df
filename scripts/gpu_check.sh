#!/bin/bash
# The GPU checks, in one run, for a machine with an NVIDIA GPU (CI has none): whether the device starts in a
# confined process, the GPU-marked tests, the honest Triton corpus on the device, and the known-good Triton
# solutions timed plainly (CUDA events) beside the verifier. Logs go to ${OUT:-gpu-check}/; each step has its
# own time limit (seconds: STEP_S, default 240) so that one stuck step leaves the others their time.
# Run from the repository root with the Python that has torch with CUDA: PYTHON=python3 bash scripts/gpu_check.sh
set -u
PY=${PYTHON:-python3}
OUT=${OUT:-gpu-check}
STEP=${STEP_S:-240}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
start=$(date +%s)
{ nvidia-smi; $PY -c "import sys, torch; print(sys.version); print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name())"; } > "$OUT/env.txt" 2>&1
$PY -c "from verifier.monitor.device_start import starts_confined; why = starts_confined('cuda', 6144); print('in the sandbox:', why or 'the cuda device starts')" 2>&1 | tee "$OUT/sandbox.txt"
timeout 120 $PY -m benchmarks.gpu_sandbox_steps > "$OUT/sandbox_steps.txt" 2>&1  # which step, where it does not
( timeout "$STEP" $PY -m pytest -p no:cacheprovider -q -s -rA -n 4 -m gpu tests/backends/test_backends_gpu.py --timeout "$STEP" > "$OUT/gpu_tests.log" 2>&1; echo "rc=$?" >> "$OUT/gpu_tests.log" ) &
( timeout "$STEP" $PY -m benchmarks.honest_corpus --backend triton --jobs 3 --json "$OUT/corpus_triton.json" > "$OUT/corpus_triton.log" 2>&1; echo "rc=$?" >> "$OUT/corpus_triton.log" ) &
wait
tail -3 "$OUT/gpu_tests.log"; tail -6 "$OUT/corpus_triton.log"
# alone on the machine: it times kernels
timeout "$STEP" $PY -m benchmarks.gpu_fidelity --backend triton --repeat 2 --json "$OUT/gpu_fidelity.json" > "$OUT/gpu_fidelity.log" 2>&1
echo "rc=$?" >> "$OUT/gpu_fidelity.log"
cat "$OUT/gpu_fidelity.log"
echo "gpu checks done in $(( $(date +%s) - start )) s; logs in $OUT/"
