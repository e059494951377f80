#!/usr/bin/env bash
# The CUDA checks and benchmarks of issue 14 in one go, for a short lease
# of a GPU machine. Each step has its own time limit and log, so one hang
# or failure does not cost the rest.
#
#   bash tools/dev/gpu_checks.sh OUT_DIR [DINOV2_REFERENCE_ROOT]
#
# OUT_DIR gets summary.txt and all.log (every step's log). DINOV2_REFERENCE_ROOT is a
# checkout of facebookresearch/dinov2 (its folder holding `dinov2/`); without
# it the comparison with the reference is skipped. ONLY="name name ..." runs
# just the named steps (for a lease too short for all of them).
set -uo pipefail
OUT=${1:?OUT_DIR}
REF=${2:-}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
CFG=configs/dinov2/dinov2_vit-s14_1xb64-200e_custom-small.py
DATA="--allow-new-keys --cfg-options train_dataloader.dataset.data_root=data/demo/train"
SUMMARY="$OUT/summary.txt"
LOGS=$(mktemp -d)  # one log per step; all of them end up in OUT/all.log
: >"$SUMMARY"

step() {  # step NAME SECONDS CMD...
    local name=$1 limit=$2
    shift 2
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then
        return 0
    fi
    local start=$SECONDS
    timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc $rc, $((SECONDS - start)) s" | tee -a "$SUMMARY"
    grep -E "$FIGURES" "$LOGS/$name.log" | tail -n 12 | tee -a "$SUMMARY"
    { echo "===== $name (rc $rc)"; cat "$LOGS/$name.log"; } >>"$OUT/all.log"
}
FIGURES='passed|failed|Error|ratio|median|peak|images/s|s/iter|data-wait|threads|torch [0-9]|aten::|=====|Self CUDA time total'

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv \
    | tee -a "$SUMMARY"
$PY -c "import torch, mmengine, mmcv, mmpretrain; print('torch', torch.__version__, 'mmengine', mmengine.__version__)" \
    | tee -a "$SUMMARY"
$PY tools/misc/make_demo_dataset.py data/demo >/dev/null 2>&1

step cuda_tests 240 $PY -m pytest -n 0 -p no:cacheprovider tests/test_cuda -q -rs
if [ -n "$REF" ]; then
    step vs_reference_fp32 150 $PY tools/analysis_tools/benchmark_vs_reference.py \
        --reference-root "$REF" --device cuda --batch 32 --repeats 10 --warmup 3
    step vs_reference_bf16 150 $PY tools/analysis_tools/benchmark_vs_reference.py \
        --reference-root "$REF" --device cuda --batch 32 --repeats 10 --warmup 3 --amp
    step profile_bf16 120 $PY tools/dev/profile_backbone.py \
        --reference-root "$REF" --device cuda --batch 32 --amp
    # mmssl-only features as extra rows (compile warms up longer)
    step vs_reference_variants 400 $PY tools/analysis_tools/benchmark_vs_reference.py \
        --reference-root "$REF" --device cuda --batch 32 --repeats 10 --warmup 5 \
        --variants plain compile packed compile+packed
fi
step packing_v2 120 $PY tools/analysis_tools/benchmark_packing.py --device cuda \
    --batch 32 --repeats 10 --warmup 3
B="--iters 20 --warmup 5 --num-workers 8"
step train_fp32 150 $PY tools/analysis_tools/benchmark_train.py $CFG $B $DATA
step train_bf16 150 $PY tools/analysis_tools/benchmark_train.py $CFG $B --amp \
    $DATA optim_wrapper.dtype=bfloat16
step train_fp16 150 $PY tools/analysis_tools/benchmark_train.py $CFG $B --amp $DATA
step train_bf16_compile 240 $PY tools/analysis_tools/benchmark_train.py $CFG $B \
    --amp --compile $DATA optim_wrapper.dtype=bfloat16
step train_fsdp_bf16 150 $PY -m torch.distributed.run --nproc_per_node 1 \
    tools/analysis_tools/benchmark_train.py $CFG $B --fsdp --amp $DATA
step train_fsdp_compile 240 $PY -m torch.distributed.run --nproc_per_node 1 \
    tools/analysis_tools/benchmark_train.py $CFG $B --fsdp --amp --compile $DATA
echo "done" | tee -a "$SUMMARY"
