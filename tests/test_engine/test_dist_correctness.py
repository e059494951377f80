"""Two gloo processes: logged losses are rank means, samplers reseeded."""

import os.path as osp
from types import SimpleNamespace

import pytest
import torch
from mmengine.config import Config

from tests.support.dist import file_init_method, init_gloo, spawn

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _worker(rank, world_size, init_method, out_dir):
    import torch.distributed as dist
    from mmengine.dataset import DefaultSampler
    from mmengine.hooks import DistSamplerSeedHook, RuntimeInfoHook
    from mmengine.logging import MessageHub
    from mmengine.runner import get_priority

    from mmssl.engine.hooks import DistLossAverageHook

    init_gloo(rank, world_size, init_method)
    result = {}

    # (a) logged outputs are averaged before RuntimeInfoHook reads them
    hub = MessageHub.get_instance(f'found-test-{rank}')
    runner = SimpleNamespace(iter=0, message_hub=hub)
    outputs = {
        'loss': torch.tensor(2.0 * (rank + 1), requires_grad=True),
        'loss_b': torch.tensor([1.0, 5.0])[rank],
        'acc': float(rank),
    }
    hooks = sorted(
        [RuntimeInfoHook(), DistLossAverageHook()],
        key=lambda h: get_priority(h.priority),
    )
    for hook in hooks:
        hook.after_train_iter(runner, 0, None, outputs)
    result['logged'] = {  # plain floats, for torch.load(weights_only)
        k: float(hub.get_scalar(f'train/{k}').current())
        for k in ('loss', 'loss_b', 'acc')
    }

    # (b) the sampler is reseeded each epoch; ranks are disjoint
    sampler = DefaultSampler(list(range(20)), shuffle=True)
    loop = SimpleNamespace(dataloader=SimpleNamespace(sampler=sampler))
    seed_hook = DistSamplerSeedHook()
    orders = []
    for epoch in range(2):
        seed_hook.before_train_epoch(
            SimpleNamespace(train_loop=loop, epoch=epoch)
        )
        orders.append(list(sampler))
    result['orders'] = orders
    torch.save(result, osp.join(out_dir, f'rank{rank}.pth'))
    dist.destroy_process_group()


@pytest.mark.slow
def test_two_gloo_processes(tmp_path):
    spawn(_worker, 2, file_init_method(tmp_path), str(tmp_path))
    results = [torch.load(tmp_path / f'rank{r}.pth') for r in range(2)]

    for rank in range(2):
        logged = results[rank]['logged']
        assert logged['loss'] == pytest.approx(3.0)  # mean(2, 4)
        assert logged['loss_b'] == pytest.approx(3.0)  # mean(1, 5)
        assert logged['acc'] == pytest.approx(0.5)  # mean(0, 1)

    orders = [results[r]['orders'] for r in range(2)]  # [rank][epoch]
    for epoch in range(2):
        a, b = orders[0][epoch], orders[1][epoch]
        assert len(a) == len(b) == 10
        assert not set(a) & set(b)  # disjoint
        assert sorted(a + b) == list(range(20))
    # a different permutation each epoch (the seed is epoch-dependent)
    assert orders[0][0] != orders[0][1]


def test_default_runtime_has_sampler_seed_hook():
    cfg = Config.fromfile(osp.join(ROOT, 'configs/_base_/default_runtime.py'))
    assert cfg.default_hooks.sampler_seed.type == 'DistSamplerSeedHook'


def test_loss_average_hook_is_noop_alone():
    from mmengine.runner import get_priority

    from mmssl.engine.hooks import DistLossAverageHook

    # runs before RuntimeInfoHook copies outputs into the message hub
    assert get_priority(DistLossAverageHook.priority) < get_priority(
        'VERY_HIGH'
    )

    outputs = {'loss': torch.tensor(1.5)}
    DistLossAverageHook().after_train_iter(
        SimpleNamespace(iter=0), 0, None, outputs
    )
    assert outputs['loss'].item() == 1.5
