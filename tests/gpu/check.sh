#!/usr/bin/env bash
# The checks that need CUDA, prepared to run as one script where a GPU is at hand (CI has none):
#   bash tests/gpu/check.sh [WORKDIR]
# TRL GRPO steps in bf16 with the project's own small model, the transformers sampler on the GPU, and,
# where vllm / deepspeed are installed (pip install -e '.[vllm,deepspeed]'), TRL's colocated vLLM,
# DeepSpeed ZeRO-3 (stopped and resumed), and both on 2 ranks with vLLM in sleep mode (needs 2 GPUs); the
# CPU runs the rest of that path (tests/test_cluster_cpu.py). Each check prints PASS, SKIP (with why) or
# FAIL; the script exits 1 if any failed,
# 77 if no CUDA device is visible (nothing checked), else 0. Record its output in docs/guide/running-at-scale.md.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
workdir="${1:-$(mktemp -d -t isocompute-gpu-XXXXXX)}"
mkdir -p "$workdir" || exit 1
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "SKIP all: no CUDA device visible (torch $(python -c 'import torch; print(torch.__version__)')); nothing checked"
    exit 77
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python -c "import torch, transformers, trl; print('torch', torch.__version__, 'CUDA', torch.version.cuda, '| transformers', transformers.__version__, '| trl', trl.__version__)"
failed=0
for check in grpo sampler vllm zero3 vllm_zero3; do
    log="$workdir/$check.log"
    started=$(date +%s)
    python tests/gpu/check_cuda.py "$check" "$workdir" >"$log" 2>&1
    status=$?
    elapsed=$(($(date +%s) - started))
    if [ "$status" = 0 ] || [ "$status" = 77 ]; then
        grep -E '^(PASS|SKIP) ' "$log" | sed "s/\$/ [${elapsed} s]/"
    else
        echo "FAIL $check (exit $status, ${elapsed} s); the end of $log:"
        tail -n 25 "$log"
        failed=1
    fi
done
exit "$failed"
