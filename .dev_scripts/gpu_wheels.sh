#!/usr/bin/env bash
# Gather, on a machine WITH network, what .dev_scripts/gpu_checks.sh installs
# on a GPU machine WITHOUT network (Python 3.12, torch, no mm* packages):
#
#   bash .dev_scripts/gpu_wheels.sh [DEST] [--reference]
#
# DEST (default .gpu_wheels/, gitignored) gets pure-Python wheels usable on
# Python 3.12: mmengine, mmcv-lite, mmpretrain and the small packages they
# import that such a machine may lack (PyYAML as a CPython 3.12 x86-64
# wheel). Pure-Python packages published only as source are built into
# wheels here. numpy, OpenCV, Pillow and matplotlib are expected there. Nothing else is
# installed or changed on this machine.
#
# --reference also copies the `dinov2/` folder of facebookresearch/dinov2
# (all that benchmark_vs_reference.py imports) into .gpu_ref/dinov2
# (gitignored), from $DINOV2_SRC (a checkout) or a shallow git clone.
#
# Carry both folders to the GPU machine with the tree, e.g. the device
# tool's `carry: [".gpu_wheels", ".gpu_ref"]` (a few MiB), then run
#   bash .dev_scripts/gpu_checks.sh OUT_DIR
# which installs them offline (pip --no-index --find-links .gpu_wheels)
# and finds .gpu_ref by itself.
#
# Check the wheels here without touching the environment (all 18 install
# for Python 3.12; the imports then run with this machine's Python):
#   pip install --no-index --no-deps --find-links .gpu_wheels \
#       --python-version 3.12 --only-binary=:all: \
#       --target /tmp/wheeltest $(bash .dev_scripts/gpu_wheels.sh --list)
#   PYTHONPATH=/tmp/wheeltest python -c 'import mmengine, mmcv, mmpretrain'
set -euo pipefail

# name==version as pip takes them; importlib-metadata 10 needs another
# package, model-index (not `modelindex`, an empty placeholder) is the one
# mmpretrain imports as `modelindex`.
PACKAGES=(
    mmengine==0.10.7
    mmcv-lite==2.2.0
    mmpretrain==1.2.0
    addict
    yapf
    platformdirs
    termcolor
    mat4py
    model-index
    ordered-set
    'importlib-metadata==8.7.*'
    zipp
    einops
    rich
    markdown-it-py
    mdurl
    pygments
    pyyaml
)
# compiled ones: wheels for CPython 3.12 on x86-64 Linux
BINARY=(pyyaml)

if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "${PACKAGES[@]}"
    exit 0
fi
DEST=.gpu_wheels
REFERENCE=0
for arg in "$@"; do
    case $arg in
        --reference) REFERENCE=1 ;;
        *) DEST=$arg ;;
    esac
done
mkdir -p "$DEST"
PY=${PYTHON:-python3}
TARGET=(--python-version 3.12 --implementation py --abi none
    --platform any --only-binary=:all:)
CP312=(--python-version 3.12 --implementation cp --abi cp312
    --platform manylinux2014_x86_64 --only-binary=:all:)
for pkg in "${PACKAGES[@]}"; do
    if [[ " ${BINARY[*]} " == *" $pkg "* ]]; then
        $PY -m pip download --quiet --no-deps "${CP312[@]}" -d "$DEST" "$pkg"
        continue
    fi
    if ! $PY -m pip download --quiet --no-deps "${TARGET[@]}" -d "$DEST" \
        "$pkg"; then
        echo "no 3.12 wheel of $pkg on the index: building one" >&2
        $PY -m pip wheel --quiet --no-deps -w "$DEST" "$pkg"
    fi
done
echo "wheels in $DEST:"
ls "$DEST"

if [ "$REFERENCE" = 1 ]; then
    SRC=${DINOV2_SRC:-}
    if [ -z "$SRC" ]; then
        SRC=$(mktemp -d)
        git clone --quiet --depth 1 \
            https://github.com/facebookresearch/dinov2 "$SRC"
    fi
    rm -rf .gpu_ref/dinov2
    mkdir -p .gpu_ref
    cp -r "$SRC/dinov2" .gpu_ref/dinov2
    echo "reference: .gpu_ref/dinov2 from $SRC"
fi
