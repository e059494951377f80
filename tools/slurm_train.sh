#!/usr/bin/env bash
# Train on a SLURM cluster: one srun task per GPU (--launcher slurm).
#   [GPUS=8 GPUS_PER_NODE=8 CPUS_PER_TASK=5 SRUN_ARGS="..."] \
#   bash tools/slurm_train.sh PARTITION JOB_NAME CONFIG [WORK_DIR] [ARGS...]
# WORK_DIR is optional: an argument after CONFIG that starts with '-' is
# already one of ARGS (MMSelfSup's `slurm_train.sh P J CONFIG --amp`), and
# tools/train.py then picks the work dir (--work-dir, the config's, or
# work_dirs/<config name>).
# Rank, world size and the master address come from SLURM's variables
# (mmssl/launch/slurm.py); the port from MASTER_PORT / PORT or the
# job id. GPUS_PER_NODE=0 runs CPU processes (gloo, no --gres).
#
# Preemptible clusters: run this script from a batch job so that SLURM can
# warn the job before its time limit and requeue it:
#   #!/bin/bash
#   #SBATCH --ntasks=8 --gres=gpu:8 --cpus-per-task=5
#   #SBATCH --signal=USR1@120   # SIGUSR1 to every task 120 s before the end
#   #SBATCH --requeue           # the job may be put back in the queue
#   bash tools/slurm_train.sh PARTITION JOB CONFIG WORK_DIR
# On SIGUSR1 (or SIGTERM) every rank stops at the next iteration boundary,
# a checkpoint is saved, rank 0 runs `scontrol requeue $SLURM_JOB_ID`, and
# the requeued job (SLURM_RESTART_COUNT > 0) resumes from WORK_DIR without
# --resume. MMSSL_SLURM_REQUEUE=0 saves without requeueing. See
# docs/en/distributed.md.
set -e
if [ $# -lt 3 ]; then
    echo "usage: bash $0 PARTITION JOB_NAME CONFIG [WORK_DIR] [ARGS...]" >&2
    exit 2
fi
PARTITION=$1
JOB_NAME=$2
CONFIG=$3
shift 3
WORK_DIR_ARGS=()
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    WORK_DIR_ARGS=("--work-dir=$1")
    shift
fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}
GRES_ARGS="--gres=gpu:${GPUS_PER_NODE}"
TASKS_PER_NODE=${GPUS_PER_NODE}
if [ "${GPUS_PER_NODE}" = "0" ]; then
    # CPU processes: no GPUs to ask for, one task per process.
    GRES_ARGS=""
    TASKS_PER_NODE=${TASKS_PER_NODE_CPU:-${GPUS}}
fi

PYTHONPATH="${ROOT}:${PYTHONPATH}" \
srun -p "${PARTITION}" \
    --job-name="${JOB_NAME}" \
    ${GRES_ARGS} \
    --ntasks="${GPUS}" \
    --ntasks-per-node="${TASKS_PER_NODE}" \
    --cpus-per-task="${CPUS_PER_TASK}" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    python -u "${ROOT}/tools/train.py" "${CONFIG}" "${WORK_DIR_ARGS[@]}" \
    --launcher=slurm "$@"
