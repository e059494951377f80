#!/usr/bin/env bash
# Train with N processes per node via torchrun (--launcher pytorch).
#   bash tools/dist_train.sh CONFIG GPUS [train.py ARGS...]
# Environment: NNODES (1), NODE_RANK (0), MASTER_ADDR (127.0.0.1),
# PORT (single node: a free port; several nodes: 29500).
# Without CUDA (or with CUDA_VISIBLE_DEVICES=-1) the processes run on CPU
# with the gloo backend. See docs/en/distributed.md.
set -e
if [ $# -lt 2 ]; then
    echo "usage: bash $0 CONFIG GPUS [ARGS...]" >&2
    exit 2
fi
CONFIG=$1
GPUS=$2
shift 2
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
if [ -z "${PORT}" ]; then
    if [ "${NNODES}" = "1" ]; then
        PORT=$(PYTHONPATH="${ROOT}:${PYTHONPATH}" python -m mmssl.launch.ports)
    else
        PORT=29500
    fi
fi
echo "dist_train: ${NNODES} node(s) x ${GPUS} process(es), node rank" \
     "${NODE_RANK}, master ${MASTER_ADDR}:${PORT}"

# torchrun passes these signals on to the workers, which save a checkpoint
# and stop (docs/en/distributed.md); SIGUSR1 is not in torchrun's default.
export PET_SIGNALS_TO_HANDLE=${PET_SIGNALS_TO_HANDLE:-SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1}

PYTHONPATH="${ROOT}:${PYTHONPATH}" \
python -m mmssl.launch.torchrun \
    --nnodes="${NNODES}" \
    --node_rank="${NODE_RANK}" \
    --master_addr="${MASTER_ADDR}" \
    --master_port="${PORT}" \
    --nproc_per_node="${GPUS}" \
    "${ROOT}/tools/train.py" "${CONFIG}" --launcher pytorch "$@"
