#!/usr/bin/env bash
# The one-call GPU check (docs/accuracy.md, "Hopper check"): run from the repository root on a machine
# with one CUDA GPU and PyTorch, results into $OUT (at most 6 files), about 7 minutes:
#
#     OUT=/some/folder bash benchmarks/device_check.sh            # on the GPU machine
#     OUT=$(mktemp -d) bash benchmarks/device_check.sh --dry-run  # here, on the CPU: the same steps on tiny shapes
#     OUT=/some/folder STEPS=probe bash benchmarks/device_check.sh  # step 1 and the probe only, ≤ 3 minutes
#     OUT=/some/folder STEPS=tensor bash benchmarks/device_check.sh # step 1 and tensor cores today, ≤ 6.8 minutes
#     OUT=/some/folder STEPS=profile bash benchmarks/device_check.sh  # step 1 and where iterations go, ≤ 5.9 minutes
#     OUT=/some/folder STEPS=sustained bash benchmarks/device_check.sh  # step 1 and tensor cores under load, ≤ 1.5 min
#
# STEPS (default train,kernels,tests): a comma-separated choice of train, kernels, tests, probe, tensor, profile,
# sustained; step 1 always runs. The last four are not in the default (the default already takes ~7 minutes).
#
# Steps, each under its own timeout (worst case 10 + 10 + 20 + 255 + 105 + 35 s = 7.3 min; expected about 6.3).
# A shorter rerun: MEASURE_MINUTES=2 KERNEL_MINUTES=0 (0 skips the kernels) OUT=… bash benchmarks/device_check.sh
#   1. nvidia-smi -L, the GPU's clocks and memory, python / torch / CUDA versions, `import archsim`;
#   2. benchmarks/gpu_train_measure.py --max-minutes 4 → $OUT/gpu_train_measured.csv (one-GPU GPT
#      training iterations; rewritten after every point, so a timeout keeps what was measured), with
#      nvidia-smi dmon's SM clock, power and temperature every 5 s → $OUT/dmon.txt;
#   3. benchmarks/gpu_validate.py --max-minutes 1.5 --no-analysis → $OUT/gpu_kernels.csv (VGG16 /
#      ResNet-50 conv and fc kernels; analysed later with archsim validate-gpu where plotly is);
#   4. the tests that need CUDA (they skip without it) → $OUT/pytest.txt;
#   5. (STEPS=probe) benchmarks/gpu_efficiency_probe.py --max-seconds 130 → $OUT/gpu_efficiency_probe.csv
#      (kernel overhead, host issue time, archsim's GEMM shapes and memory-bound ops of the two GPTs;
#      worst case 10 + 10 + 20 + 145 s = 3.1 min with step 1, expected about 1 minute);
#   6. (STEPS=tensor) tensor cores as training runs them today, bf16 + FlashAttention-2 (SDPA's flash backend):
#      gpu_train_measure.py --dtype bf16 --attention flash on the two GPTs at sequence 1,024, micro-batches 2, 4
#      and 8 (micro-batch 1 is launch-bound, already measured in fp16) (2.5 min →
#      $OUT/gpu_train_measured_flash.csv) and the 2,048-wide one at sequence 4,096 (1.25 min →
#      $OUT/gpu_train_measured_flash_s4096.csv), then gpu_tensor_probe.py --max-seconds 100 (bf16 GEMM grid,
#      FlashAttention-2 forward/backward → $OUT/gpu_tensor_probe.csv); worst case 40 + 165 + 90 + 115 s = 6.8 min;
#   7. (STEPS=profile) gpu_train_profile.py --max-seconds 120 (one iteration of each of its points under
#      torch.profiler: kernel by kernel → $OUT/gpu_train_profile.csv), then the 4,096-wide GPT at sequence 2,048
#      in bf16, flash and standard attention (75 s each → $OUT/gpu_train_measured_h4096_flash.csv,
#      $OUT/gpu_train_measured_h4096_standard.csv); worst case 40 + 135 + 2 × 90 s = 5.9 min;
#   8. (STEPS=sustained) gpu_sustained_gemm.py --seconds 12: three bf16 GEMM shapes in a burst, then back to back
#      beside nvidia-smi's SM clock and power (→ $OUT/gpu_sustained_gemm.csv); worst case 40 + 60 s.
# Everything printed goes to $OUT/log.txt too. Nothing is installed; PYTHONPATH=. finds archsim.
# Afterwards, here: python benchmarks/bench_vtrain_e2e.py --measured gpu_train_measured.csv
#     --cluster configs/clusters/h200_1gpu.toml (or h100_1gpu.toml) [--efficiency-probe gpu_efficiency_probe.csv],
#     and archsim validate-gpu --csv gpu_kernels.csv.
set -u -o pipefail

DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; elif [ $# -gt 0 ]; then echo "usage: OUT=DIR $0 [--dry-run]" >&2; exit 2; fi
: "${OUT:?set OUT to the folder the results go to}"
STEPS=",${STEPS:-train,kernels,tests},"
for name in ${STEPS//,/ }; do
  case $name in train|kernels|tests|probe|tensor|profile|sustained) ;; *) echo "STEPS: unknown step '$name' (train, kernels, tests, probe, tensor, profile, sustained)" >&2; exit 2;; esac
done
want() { [[ $STEPS == *",$1,"* ]]; }
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2  # absolute: the steps run from the repository root
cd "$(dirname "$0")/.." || exit 2
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
PY=${PYTHON:-python3}
# The test extra's reference packages absent on the GPU machine (tests/conftest.py refuses to run otherwise).
export ARCHSIM_TESTS_WITHOUT=${ARCHSIM_TESTS_WITHOUT:-scalesim,distributed,mkdocs,openpyxl}

if [ $DRY = 1 ]; then
  # As on the GPU machine: no plotly, no SCALE-Sim (a shim on PYTHONPATH makes their import fail).
  SHIM=$(mktemp -d) || exit 2
  for name in plotly scalesim; do
    echo "raise ImportError('$name is hidden by device_check.sh --dry-run: the GPU machine has none')" >"$SHIM/$name.py"
  done
  export PYTHONPATH="$PYTHONPATH:$SHIM"
  MEASURE=(--device cpu --tiny --global-batches 4 --micro-batches 1,2 --warmup 1 --iterations 1 --max-minutes 0.5)
  KERNELS=(--networks vgg16 --limit 1 --batches 1 --repeats 1 --warmup 1)
  PROBE=(--device cpu --tiny --warmup 1 --repeats 2 --max-seconds 60)
  FLASH=(--device cpu --tiny --global-batches 4 --micro-batches 1,2 --warmup 1 --iterations 1)
  FLASH_LONG=(--device cpu --tiny --seq 64 --global-batches 4 --micro-batches 1 --warmup 1 --iterations 1)
  TENSOR=(--device cpu --tiny --warmup 1 --repeats 2)
  PROFILE=(--device cpu --tiny --warmup 1)
  WIDE=(--device cpu --tiny --global-batches 2 --micro-batches 1 --warmup 1 --iterations 1)
  SUSTAINED=(--device cpu --tiny --seconds 1)
  # the probe needs neither scipy nor pandas: hide them from it too
  PROBE_SHIM=$(mktemp -d) || exit 2
  for name in scipy pandas; do
    echo "raise ImportError('$name is hidden from the probe by device_check.sh --dry-run')" >"$PROBE_SHIM/$name.py"
  done
else
  MEASURE=(--max-minutes "${MEASURE_MINUTES:-4}")
  KERNELS=(--batches 1,8,32 --repeats 5 --warmup 2 --max-minutes "${KERNEL_MINUTES:-1.5}")
  PROBE=(--max-seconds 130)
  FLASH=(--global-batches 16 --micro-batches 2,4,8)
  FLASH_LONG=(--models configs/transformers/gpt_2048h_20l.json --seq 4096 --micro-batches 1,2,4 --global-batches 16)
  TENSOR=()
  PROFILE=()
  SUSTAINED=(--seconds 12)
  WIDE=(--models configs/transformers/gpt_4096h_12l.json --seq 2048 --micro-batches 1,2,4 --global-batches 16)
  PROBE_SHIM=""
fi
PROBE_TIMEOUT=145
# each step's hard limit: its budget (which counts from the start of its Python process) plus 15 s
MEASURE_TIMEOUT=$(awk -v m="${MEASURE_MINUTES:-4}" 'BEGIN { print int(m * 60 + 15) }')
KERNEL_TIMEOUT=$(awk -v m="${KERNEL_MINUTES:-1.5}" 'BEGIN { print int(m * 60 + 15) }')
CUDA_TESTS=(
  "tests/test_gpu_timing_script.py::test_timing_script_on_one_tiny_layer"
  "tests/test_gpu_timing_script.py::test_timing_script_end_to_end_on_one_shape"
  "tests/test_gpu_train_measure.py::test_tiny_run_on_cuda"
)

step() { echo; echo "=== $(date -u +%H:%M:%S) $*"; }

main() {
  local status=0
  step "1. the machine"
  if command -v nvidia-smi >/dev/null; then
    timeout 10 nvidia-smi -L
    timeout 10 nvidia-smi --format=csv --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,clocks.max.mem,power.limit,driver_version,temperature.gpu
  else
    echo "no nvidia-smi"
  fi
  timeout 20 "$PY" -c "import sys, torch, archsim; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda, '| available', torch.cuda.is_available(), '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU', '| archsim', archsim.__version__)" || status=1

  if want train; then
  step "2. training iterations (gpu_train_measure.py ${MEASURE[*]})"
  local dmon=""
  if command -v nvidia-smi >/dev/null; then  # SM clock, power, temperature every 5 s while training runs
    timeout "$MEASURE_TIMEOUT" nvidia-smi dmon -s pc -d 5 >"$OUT/dmon.txt" 2>&1 &
    dmon=$!
  fi
  timeout "$MEASURE_TIMEOUT" "$PY" benchmarks/gpu_train_measure.py --out "$OUT/gpu_train_measured.csv" "${MEASURE[@]}" || status=1
  if [ -n "$dmon" ]; then kill "$dmon" 2>/dev/null; wait "$dmon" 2>/dev/null; fi
  fi

  if want kernels; then
  step "3. conv/fc kernels (gpu_validate.py ${KERNELS[*]})"
  if [ "${KERNEL_MINUTES:-1.5}" = 0 ]; then
    echo "skipped (KERNEL_MINUTES=0)"
  elif [ $DRY = 1 ]; then
    echo "(dry run: gpu_validate.py needs CUDA; its exit 2 without a GPU is expected)"
    timeout "$KERNEL_TIMEOUT" "$PY" benchmarks/gpu_validate.py --no-analysis --out "$OUT/gpu_kernels.csv" "${KERNELS[@]}"
    [ $? = 2 ] || status=1
  else
    timeout "$KERNEL_TIMEOUT" "$PY" benchmarks/gpu_validate.py --no-analysis --out "$OUT/gpu_kernels.csv" "${KERNELS[@]}" || status=1
  fi
  fi

  if want tests; then
  step "4. the CUDA tests"
  timeout 35 "$PY" -m pytest -q -p no:cacheprovider "${CUDA_TESTS[@]}" 2>&1 | tee "$OUT/pytest.txt" || status=1
  fi

  if want probe; then
  step "5. kernel-efficiency probe (gpu_efficiency_probe.py ${PROBE[*]})"
  PYTHONPATH="$PYTHONPATH${PROBE_SHIM:+:$PROBE_SHIM}" timeout "$PROBE_TIMEOUT" "$PY" benchmarks/gpu_efficiency_probe.py \
    --out "$OUT/gpu_efficiency_probe.csv" "${PROBE[@]}" || status=1
  fi

  if want tensor; then
  step "6. tensor cores today: bf16 + FlashAttention-2 iterations, then bf16 GEMM and flash kernels"
  local tensor_dmon=""
  if command -v nvidia-smi >/dev/null; then  # SM clock, power, temperature every 5 s
    timeout 380 nvidia-smi dmon -s pc -d 5 >"$OUT/dmon_tensor.txt" 2>&1 &
    tensor_dmon=$!
  fi
  timeout 165 "$PY" benchmarks/gpu_train_measure.py --dtype bf16 --attention flash --max-minutes 2.5 \
    --out "$OUT/gpu_train_measured_flash.csv" "${FLASH[@]}" || status=1
  timeout 90 "$PY" benchmarks/gpu_train_measure.py --dtype bf16 --attention flash --max-minutes 1.25 \
    --out "$OUT/gpu_train_measured_flash_s4096.csv" "${FLASH_LONG[@]}" || status=1
  timeout 115 "$PY" benchmarks/gpu_tensor_probe.py --max-seconds 100 --out "$OUT/gpu_tensor_probe.csv" \
    "${TENSOR[@]}" || status=1
  if [ -n "$tensor_dmon" ]; then kill "$tensor_dmon" 2>/dev/null; wait "$tensor_dmon" 2>/dev/null; fi
  fi

  if want profile; then
  step "7. where iterations go (gpu_train_profile.py), then the 4,096-wide GPT in bf16, flash and standard"
  timeout 135 "$PY" benchmarks/gpu_train_profile.py --max-seconds 120 --out "$OUT/gpu_train_profile.csv" \
    "${PROFILE[@]}" || status=1
  for attention in flash standard; do
    timeout 90 "$PY" benchmarks/gpu_train_measure.py --dtype bf16 --attention $attention --max-minutes 1.25 \
      --out "$OUT/gpu_train_measured_h4096_$attention.csv" "${WIDE[@]}" || status=1
  done
  fi

  if want sustained; then
  step "8. tensor cores under sustained load (gpu_sustained_gemm.py)"
  timeout 60 "$PY" benchmarks/gpu_sustained_gemm.py --out "$OUT/gpu_sustained_gemm.csv" "${SUSTAINED[@]}" || status=1
  fi

  step "done (status $status, STEPS ${STEPS:1:-1}); files in OUT:"
  ls -la "$OUT"
  return $status
}

main 2>&1 | tee "$OUT/log.txt"
