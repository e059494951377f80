#!/usr/bin/env bash
# Test a checkpoint on a SLURM cluster (--launcher slurm).
#   [GPUS=8 GPUS_PER_NODE=8 CPUS_PER_TASK=5 SRUN_ARGS="..."] \
#   bash tools/slurm_test.sh PARTITION JOB_NAME CONFIG CHECKPOINT [ARGS...]
set -e
if [ $# -lt 4 ]; then
    echo "usage: bash $0 PARTITION JOB_NAME CONFIG CHECKPOINT [ARGS...]" >&2
    exit 2
fi
PARTITION=$1
JOB_NAME=$2
CONFIG=$3
CHECKPOINT=$4
shift 4
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}

PYTHONPATH="${ROOT}:${PYTHONPATH}" \
srun -p "${PARTITION}" \
    --job-name="${JOB_NAME}" \
    --gres=gpu:"${GPUS_PER_NODE}" \
    --ntasks="${GPUS}" \
    --ntasks-per-node="${GPUS_PER_NODE}" \
    --cpus-per-task="${CPUS_PER_TASK}" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    python -u "${ROOT}/tools/test.py" "${CONFIG}" "${CHECKPOINT}" \
    --launcher=slurm "$@"
