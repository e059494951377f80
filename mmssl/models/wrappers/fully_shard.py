"""FSDP2 (``torch.distributed.fsdp.fully_shard``) as an mmengine wrapper.

mmengine 0.10 knows FSDP1 only (``FSDPStrategy`` of the FlexibleRunner).
:class:`MMFullyShard` brings FSDP2 to the ordinary Runner the way
``MMDistributedDataParallel`` brings DDP: a config selects it,

.. code-block:: python

    model_wrapper_cfg = dict(
        type='MMFullyShard', param_dtype='bfloat16', reduce_dtype='float32')

and it shards every transformer block (each child of a ``ModuleList``
called ``layers`` or ``blocks``) as one unit, then the root (the rest:
patch embedding, heads, ...). Parameters become ``DTensor`` shards;
the optimizer, built after wrapping, holds only this rank's shard.
Works on CPU with gloo (tested) and on CUDA with NCCL (untested here).
"""

from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Sequence, Union

import torch
import torch.distributed as torch_dist
from torch import nn

from mmssl.registry import MODEL_WRAPPERS

#: Names of the ``ModuleList`` attributes whose children are shard units.
BLOCK_LISTS = ('layers', 'blocks')


def _dtype(value: Union[None, str, torch.dtype]) -> Optional[torch.dtype]:
    if value is None or isinstance(value, torch.dtype):
        return value
    dtype = getattr(torch, str(value), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f'Unknown dtype {value!r}; use e.g. "bfloat16".')
    return dtype


def shard_units(
    model: nn.Module, block_lists: Sequence[str] = BLOCK_LISTS
) -> List[nn.Module]:
    """The modules sharded one by one: children of block lists.

    Args:
        model (nn.Module): The whole model.
        block_lists (Sequence[str]): Attribute names of the
            ``nn.ModuleList`` whose children are units.

    Returns:
        list[nn.Module]: The units, in ``named_modules`` order.
    """
    units = []
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and (
            name.rsplit('.', 1)[-1] in block_lists
        ):
            units.extend(module.children())
    return units


@MODEL_WRAPPERS.register_module()
class MMFullyShard(nn.Module):
    """Shard a model with FSDP2, per block and at the root.

    Args:
        module (nn.Module): The model (an mmengine ``BaseModel``).
        param_dtype (str | torch.dtype, optional): Dtype the parameters
            are all-gathered in and computed with (``'bfloat16'``); the
            sharded master weights and the optimizer stay float32.
            Defaults to None (parameters' own dtype).
        reduce_dtype (str | torch.dtype, optional): Dtype of the gradient
            reduce-scatter. Defaults to ``'float32'``.
        reshard_after_forward (bool): Free the gathered block parameters
            after forward (ZeRO-3); False keeps them until backward
            (ZeRO-2-like). Defaults to True.
        block_lists (Sequence[str]): See :func:`shard_units`.
        init_weights (bool): Call ``module.init_weights()`` and broadcast
            rank 0's weights before sharding (sharded parameters cannot
            be broadcast afterwards, as mmengine's runner does). The
            runner then skips its own initialisation. Defaults to False;
            :class:`~mmssl.engine.runner.SSLRunner` passes True.
    """

    def __init__(
        self,
        module: nn.Module,
        param_dtype: Union[None, str, torch.dtype] = None,
        reduce_dtype: Union[None, str, torch.dtype] = 'float32',
        reshard_after_forward: bool = True,
        block_lists: Sequence[str] = BLOCK_LISTS,
        init_weights: bool = False,
    ) -> None:
        super().__init__()
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        if not torch_dist.is_initialized():
            raise RuntimeError(
                'MMFullyShard needs a started process group (launch with '
                '--launcher pytorch/slurm).'
            )
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
        mesh = init_device_mesh(device, (torch_dist.get_world_size(),))
        policy = MixedPrecisionPolicy(
            param_dtype=_dtype(param_dtype), reduce_dtype=_dtype(reduce_dtype)
        )
        kwargs = dict(
            mesh=mesh,
            mp_policy=policy,
            reshard_after_forward=reshard_after_forward,
        )
        self.weights_initialized = init_weights
        if init_weights:
            self._init_and_broadcast(module)
        self.units = len(shard_units(module, block_lists))
        for unit in shard_units(module, block_lists):
            fully_shard(unit, **kwargs)
        fully_shard(module, **kwargs)
        self.module = module

    @staticmethod
    def _init_and_broadcast(module: nn.Module) -> None:
        if hasattr(module, 'init_weights'):
            module.init_weights()
        for tensor in module.state_dict().values():
            torch_dist.broadcast(tensor, src=0)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def train_step(self, data, optim_wrapper) -> Dict[str, torch.Tensor]:
        """Preprocess, forward, backward and step, like mmengine's DDP."""
        with optim_wrapper.optim_context(self):
            data = self.module.data_preprocessor(data, training=True)
            if isinstance(data, dict):
                losses = self.module(**data, mode='loss')
            else:
                losses = self.module(*data, mode='loss')
        parsed_loss, log_vars = self.module.parse_losses(losses)
        optim_wrapper.update_params(parsed_loss)
        return log_vars

    def val_step(self, data) -> list:
        return self.module.val_step(data)

    def test_step(self, data) -> list:
        return self.module.test_step(data)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Skip the gradient reduce-scatter (gradient accumulation)."""
        self.module.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            self.module.set_requires_gradient_sync(True)
