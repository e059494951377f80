#!/usr/bin/env bash
# Test a checkpoint with N processes per node via torchrun (--launcher pytorch).
#   bash tools/dist_test.sh CONFIG CHECKPOINT GPUS [test.py ARGS...]
# Environment: NNODES (1), NODE_RANK (0), MASTER_ADDR (127.0.0.1),
# PORT (single node: a free port; several nodes: 29500).
# Without CUDA (or with CUDA_VISIBLE_DEVICES=-1) the processes run on CPU
# with the gloo backend. See docs/en/distributed.md.
set -e
if [ $# -lt 3 ]; then
    echo "usage: bash $0 CONFIG CHECKPOINT GPUS [ARGS...]" >&2
    exit 2
fi
CONFIG=$1
CHECKPOINT=$2
GPUS=$3
shift 3
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
echo "dist_test: ${NNODES} node(s) x ${GPUS} process(es), node rank" \
     "${NODE_RANK}, master ${MASTER_ADDR}:${PORT}"

PYTHONPATH="${ROOT}:${PYTHONPATH}" \
python -m mmssl.launch.torchrun \
    --nnodes="${NNODES}" \
    --node_rank="${NODE_RANK}" \
    --master_addr="${MASTER_ADDR}" \
    --master_port="${PORT}" \
    --nproc_per_node="${GPUS}" \
    "${ROOT}/tools/test.py" "${CONFIG}" "${CHECKPOINT}" --launcher pytorch "$@"
