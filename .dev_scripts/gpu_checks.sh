#!/usr/bin/env bash
# The GPU checks of issue 27 in one go, for a short lease of one H100 or
# H200 without network (Python 3.12, torch, no mm* packages): under 8
# minutes in all. Each step has its own time limit and log, so one hang,
# crash or out-of-memory does not cost the rest; a global budget
# (BUDGET seconds, default 470) skips what no longer fits.
#
#   bash .dev_scripts/gpu_checks.sh [OUT_DIR] [DINOV2_REFERENCE_ROOT]
#
# Before the lease, on a machine with network:
#   bash .dev_scripts/gpu_wheels.sh --reference   # .gpu_wheels/ and .gpu_ref/
# and carry both (gitignored) folders with the tree. This script installs
# the wheels offline, then mmssl itself (editable, no dependencies).
#
# OUT_DIR (default $OUT, else gpu_checks_out) gets summary.txt and all.log
# (every step's log). DINOV2_REFERENCE_ROOT is the folder holding
# `dinov2/` (default .gpu_ref); without it the comparisons with the
# reference are skipped. ONLY="name name ..." runs just the named steps;
# SKIP_INSTALL=1 leaves the Python environment alone (a local dry run).
#
# Steps, most important first (mmssl rows as the configs build the model:
# drop_path_mode='static'; each step reruns the reference beside them):
#   sync_debug      20 DINOv2 steps under set_sync_debug_mode('error')
#   ref_bf16        ViT-S/14 batch 32 vs the reference, bf16: plain, packed
#   cuda_tests      the rest of tests/test_cuda
#   ref_vitl_b64    ViT-L/14 batch 64, bf16, whole step, plain and packed:
#                   times, MFU and each side's peak memory (mmssl with
#                   selective activation checkpointing, as the preset)
#   ref_bf16_comp   as ref_bf16 for compile and compile+packed
#   ref_fp32        as ref_bf16 in fp32 with TF32 matmuls on both sides
#   ref_vitl_nocp   as ref_vitl_b64 packed, mmssl without activation
#                   checkpointing: is its memory at most the reference's,
#                   and its speed above it (issue 27's ViT-L target)?
#   preset_vitl     benchmark_train.py on the ViT-L/14 batch-64 preset
#                   (images/s, MFU, memory), if the budget allows
set -uo pipefail
OUT=${1:-${OUT:-gpu_checks_out}}
REF=${2:-}
if [ -z "$REF" ] && [ -d .gpu_ref/dinov2 ]; then REF=.gpu_ref; fi
BUDGET=${BUDGET:-470}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
SUMMARY="$OUT/summary.txt"
LOGS=$(mktemp -d)  # one log per step; all of them end up in OUT/all.log
: >"$SUMMARY"
FIGURES='passed|failed|skipped|xfail|XPASS|Error|error|ratio|median|peak|MFU|TFLOP|images/s|out of memory|=====|torch [0-9]'

step() {  # step NAME SECONDS CMD...
    local name=$1 limit=$2
    shift 2
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then
        return 0
    fi
    local left=$((BUDGET - SECONDS))
    if [ "$left" -lt 30 ]; then
        echo "== $name: skipped, ${left} s of the budget left" | tee -a "$SUMMARY"
        return 0
    fi
    if [ "$limit" -gt "$left" ]; then limit=$left; fi
    local start=$SECONDS
    timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc $rc, $((SECONDS - start)) s (limit $limit s)" \
        | tee -a "$SUMMARY"
    grep -E "$FIGURES" "$LOGS/$name.log" | tail -n 16 | tee -a "$SUMMARY"
    { echo "===== $name (rc $rc)"; cat "$LOGS/$name.log"; } >>"$OUT/all.log"
}

# ---- offline install: the carried wheels, then mmssl without deps
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv \
    | tee -a "$SUMMARY"
if [ -n "${SKIP_INSTALL:-}" ]; then
    echo "install skipped (SKIP_INSTALL)"
elif [ -d .gpu_wheels ]; then
    # names, not files: what is installed already stays as it is
    $PY -m pip install --quiet --no-index --no-deps --find-links .gpu_wheels \
        $(bash .dev_scripts/gpu_wheels.sh --list) 2>&1 | tail -n 3
    if ! $PY -c 'import mmengine, mmcv, mmpretrain' 2>/dev/null; then
        # a read-only environment: the wheels into a folder of their own
        $PY -m pip install --quiet --no-index --no-deps --no-compile \
            --target /tmp/gpu_site .gpu_wheels/*.whl 2>&1 | tail -n 3
        export PYTHONPATH=/tmp/gpu_site${PYTHONPATH:+:$PYTHONPATH}
    fi
fi
if [ -z "${SKIP_INSTALL:-}" ]; then
    $PY -m pip install --quiet --no-deps --no-build-isolation -e . 2>&1 \
        | tail -n 3 || true
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # if -e . failed
$PY -c "import torch, mmengine, mmcv, mmpretrain, mmssl; print('torch', torch.__version__, 'mmengine', mmengine.__version__, 'mmcv', mmcv.__version__, 'mmpretrain', mmpretrain.__version__)" \
    2>&1 | tail -n 3 | tee -a "$SUMMARY"
echo "setup: $SECONDS s" | tee -a "$SUMMARY"

T="-m pytest -n 0 -p no:cacheprovider -q -rs"
VS=".dev_scripts/benchmark_vs_reference.py --reference-root $REF --device cuda"
step sync_debug 75 $PY $T tests/test_cuda/test_host_syncs_cuda.py
if [ -n "$REF" ]; then
    step ref_bf16 100 $PY $VS --batch 32 --repeats 8 --warmup 3 --amp \
        --variants plain packed
fi
step cuda_tests 110 $PY $T tests/test_cuda \
    --ignore=tests/test_cuda/test_host_syncs_cuda.py
if [ -n "$REF" ]; then
    step ref_vitl_b64 110 $PY $VS --arch large --batch 64 --what step \
        --with-cp selective --repeats 3 --warmup 2 --amp \
        --variants plain packed
    step ref_bf16_comp 180 $PY $VS --batch 32 --repeats 6 --warmup 3 --amp \
        --variants compile compile+packed
    step ref_fp32 90 $PY $VS --batch 32 --repeats 5 --warmup 3 --tf32 \
        --variants plain packed
    step ref_vitl_nocp 100 $PY $VS --arch large --batch 64 --what step \
        --with-cp none --repeats 3 --warmup 2 --amp --variants packed
else
    echo "== no dinov2 reference (.gpu_ref/dinov2): comparisons skipped" \
        | tee -a "$SUMMARY"
fi
# the ViT-L preset as users run it (its data pipeline on the bundled
# digits, 10 workers), if the budget still allows: images/s and MFU
if [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" preset_vitl "* ]]; then
    $PY tools/misc/make_demo_dataset.py data/demo >/dev/null 2>&1
fi
step preset_vitl 100 $PY tools/analysis_tools/benchmark_train.py \
    configs/dinov2/dinov2_vit-l14_1xb64-100e_custom.py --iters 15 --warmup 5 \
    --cfg-options train_dataloader.dataset.data_root=data/demo/train
echo "done in $SECONDS s" | tee -a "$SUMMARY"
