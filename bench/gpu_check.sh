#!/usr/bin/env bash
# The checks and figures that need a CUDA GPU, in one call (docs/BENCHMARKS.md "GPU"): what the GPU is, the
# engine's unit tests with CUDA present (engine.load then picks CUDA by default, so every parity test against
# Hugging Face eager runs the engine's CUDA path; tests/unit/test_device.py's CUDA-only tests run too), and
# bench/bench_gpu.py's figures. Only the test files that need neither Streamlit nor a browser are run: a GPU
# machine need not have the app's packages.
#
# Usage (from the repository root): bash bench/gpu_check.sh OUT_DIR
set -u
out=${1:-/tmp/gpu-check}
mkdir -p "$out"
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$py -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available(), '| transformers', transformers.__version__)"
files=()
for f in tests/unit/test_*.py; do
  case $f in */test_bertviz_offline.py | */test_classroom_script.py | */test_server_settings_doc.py) continue ;; esac
  grep -qE '^(from|import) (app|bench)\b|streamlit|playwright|psycopg' "$f" || files+=("$f")
done
workers=$(($(nproc) > 8 ? 8 : $(nproc)))
parallel=()
$py -c "import xdist" 2>/dev/null && parallel=(-n "$workers")  # pytest-xdist where installed (the GPU image has it)
echo "== ${#files[@]} test files, ${parallel[*]:-one process}"
timeout "${TEST_TIMEOUT:-240}" $py -m pytest -q -p no:cacheprovider "${parallel[@]}" -rfE "${files[@]}" \
  --junitxml "$out/pytest.xml" >"$out/pytest.log" 2>&1
echo "pytest rc=$?"
grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest.log" | tail -40
echo "== bench_gpu"
timeout "${BENCH_TIMEOUT:-300}" $py -m bench.bench_gpu ${BENCH_ARGS:-} --out "$out/gpu.md" 2>"$out/bench.log"
echo "bench rc=$?"
tail -5 "$out/bench.log"
