#!/usr/bin/env bash
# Train on a SLURM cluster: one srun task per GPU (--launcher slurm).
#   [GPUS=8 GPUS_PER_NODE=8 CPUS_PER_TASK=5 SRUN_ARGS="..."] \
#   bash tools/slurm_train.sh PARTITION JOB_NAME CONFIG WORK_DIR [ARGS...]
# Rank, world size and the master address come from SLURM's variables
# (mmssl/launch/slurm.py); the port from MASTER_PORT / PORT or the
# job id. See docs/en/distributed.md.
set -e
if [ $# -lt 4 ]; then
    echo "usage: bash $0 PARTITION JOB_NAME CONFIG WORK_DIR [ARGS...]" >&2
    exit 2
fi
PARTITION=$1
JOB_NAME=$2
CONFIG=$3
WORK_DIR=$4
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
    python -u "${ROOT}/tools/train.py" "${CONFIG}" --work-dir="${WORK_DIR}" \
    --launcher=slurm "$@"
