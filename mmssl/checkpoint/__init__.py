"""The one place that reads and writes checkpoints (docs/en/checkpoints.md).

* :mod:`.policy`: which types a checkpoint may unpickle, trust opt-ins,
  the :func:`loading_policy` scope.
* :mod:`.io`: the safe loader and atomic saves.
* :mod:`.state_dict`: the weights inside a checkpoint: unwrap, prefixes,
  the backbone's prefix.
* :mod:`.layouts`: DINOv2 and timm key layouts, the pos-embed resize.
* :mod:`.pretrained`: warm starts with a key report (``PretrainedStrip``).
* :mod:`.sharded`: DCP (sharded) checkpoints, atomic; to one file.
* :mod:`.cli`: ``--trusted`` and the refusal message of the tools.
"""

from .cli import (
    add_trusted_argument,
    exit_on_untrusted,
    refusal_message,
    trust_from_args,
)
from .io import (
    atomic_destination,
    atomic_write_bytes,
    atomic_write_text,
    load_checkpoint,
    save_checkpoint_atomic,
    torch_load_safe,
)
from .policy import (
    TRUST_ENV,
    UnsafeCheckpointError,
    add_safe_checkpoint_globals,
    checkpoint_trusted,
    loading_policy,
    safe_checkpoint_globals,
    set_checkpoint_trust,
    trusted_checkpoints,
)
from .pretrained import (
    LoadReport,
    PretrainedStrip,
    load_pretrained,
    overwritten_after_load,
)
from .sharded import (
    dcp_to_file,
    load_runner_state,
    load_sharded,
    save_sharded,
    training_state,
)
from .state_dict import (
    MOMENTUM_BACKBONE_PATHS,
    NETWORKS,
    STATE_KEYS,
    STUDENT_BACKBONE_PATHS,
    TEACHER_BACKBONE_PATHS,
    add_prefix,
    backbone_prefixes,
    describe_network,
    find_backbone_prefix,
    select_backbone,
    strip_prefix,
    unwrap_state_dict,
)

__all__ = [
    'MOMENTUM_BACKBONE_PATHS',
    'NETWORKS',
    'STATE_KEYS',
    'STUDENT_BACKBONE_PATHS',
    'TEACHER_BACKBONE_PATHS',
    'TRUST_ENV',
    'LoadReport',
    'PretrainedStrip',
    'UnsafeCheckpointError',
    'add_prefix',
    'add_safe_checkpoint_globals',
    'add_trusted_argument',
    'atomic_destination',
    'atomic_write_bytes',
    'atomic_write_text',
    'backbone_prefixes',
    'checkpoint_trusted',
    'dcp_to_file',
    'describe_network',
    'exit_on_untrusted',
    'find_backbone_prefix',
    'load_checkpoint',
    'load_pretrained',
    'load_runner_state',
    'load_sharded',
    'overwritten_after_load',
    'loading_policy',
    'refusal_message',
    'safe_checkpoint_globals',
    'save_checkpoint_atomic',
    'save_sharded',
    'select_backbone',
    'set_checkpoint_trust',
    'strip_prefix',
    'torch_load_safe',
    'training_state',
    'trust_from_args',
    'trusted_checkpoints',
    'unwrap_state_dict',
]
