#!/usr/bin/env bash
# The checks that need a CUDA device, in one run (for a session that is lent a GPU machine):
# the CUDA tests (monitor certificate + repair and fp16 GradScaler on CUDA, the Foundry
# witness's device name and peak memory), the monitor test suite with a GPU present, and the
# monitor's overhead bench on the GPU. No install step: the machine's python3 must have torch;
# wheels of the other dependencies may wait in .whl/ (see docs/README.md, "GPU checks").
# Results go to $OUT (default /tmp/gpu-check).
set -u
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/generated/python:$PWD/runtime:$PWD/conformance:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
nvidia-smi -L
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
"$PY" -m pytest -p no:cacheprovider -q -rs tests/monitor/test_devices.py \
    tests/foundry/test_witness.py 2>&1 | tee "$OUT/cuda-tests.txt" | tail -25
timeout 200 "$PY" -m pytest -p no:cacheprovider -q -n 8 tests/monitor 2>&1 \
    | tee "$OUT/monitor-tests.txt" | tail -15
timeout 240 "$PY" bench/monitor_overhead.py --device cuda --batch 256 --quick 2>&1 \
    | tee "$OUT/bench-cuda.txt"
