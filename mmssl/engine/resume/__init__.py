"""Resume: everything a run saves so that it can continue exactly.

- :mod:`.options`: ``--resume [CKPT]`` and the automatic resume of a
  requeued SLURM job (which checkpoint, and does it fit the config);
- :mod:`.checkpointing`: the runner's saves and loads (loop state and
  every rank's buffers in each checkpoint, atomic files, sharded folders);
- :mod:`.loop_state`: the train loops' data position and random states;
- :mod:`.data`: iterating an epoch from any batch, samples seeded by
  position; :mod:`.rng`: saving, restoring and deriving random states;
- :mod:`.rank_buffers`: each rank's BatchNorm statistics;
- :mod:`.sharded`: sharded (DCP) checkpoints of a run;
- :mod:`.preemption`: save and stop on a signal, safety checkpoints.

Below it, :mod:`mmssl.checkpoint` reads and writes the files and
:mod:`mmssl.launch.resume` finds the newest complete checkpoint (standard
library only, for the launchers).
"""

from .preemption import PreemptionHook, TrainingStopped, exit_status

__all__ = ['PreemptionHook', 'TrainingStopped', 'exit_status']
