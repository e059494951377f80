#!/usr/bin/env bash
# Run the multi-process tests (spawned gloo ranks, subprocess launchers,
# the one-node SLURM, crash and preemption tests) N times in a row and
# print one line per run: the flake hunt of docs/en/contributing.md.
#   bash .dev_scripts/repeat_multiprocess_tests.sh [N=5] [extra pytest args]
set -u
cd "$(dirname "$0")/.."
N=${1:-5}
shift || true
FILES=(
    tests/test_datasets/test_distributed_bad_files.py
    tests/test_dist_helpers.py
    tests/test_engine/test_dist_correctness.py
    tests/test_launch/test_launch_env.py
    tests/test_engine/test_optimizers/test_nan_guard.py
    tests/test_engine/test_resume/test_preemption.py
    tests/test_engine/test_hooks/test_atomic_checkpoint_hook.py
    tests/test_launch/test_lock.py
    tests/test_launch/test_requeue.py
    tests/test_launch/test_slurm_requeue.py
    tests/test_models/test_algorithms/test_dino_ddp_equivalence.py
    tests/test_models/test_algorithms/test_memory_banks_dist.py
    tests/test_tools/test_dist_train_sh.py
    tests/test_tools/test_launch_scripts.py
    tests/test_tools/test_train_tool.py
    tests/test_models/test_algorithms/test_dino_training.py::test_dinov2_demo_two_process_gloo_with_cp
    tests/test_models/test_backbones/test_dino_vit.py::test_ddp_with_cp_two_forwards_per_step
)
failed=0
for i in $(seq 1 "$N"); do
    start=$(date +%s)
    log=$(mktemp -t mp_run_XXXX.log)
    OMP_NUM_THREADS=1 python -m pytest "${FILES[@]}" -q -p no:cacheprovider "$@" >"$log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || failed=$((failed + 1))
    echo "run $i: rc=$rc $(( $(date +%s) - start )) s, load $(cut -d' ' -f1-3 /proc/loadavg): $(tail -1 "$log") (log: $log)"
done
echo "$failed of $N runs failed"
[ $failed -eq 0 ]
