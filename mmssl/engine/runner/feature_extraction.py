"""Extracting one feature vector per image from a (self-supervised) model."""

from typing import Callable, Iterable, Sequence

import torch
from mmengine.dist import is_main_process

from mmssl.engine.runner.progress import progress


def pool_features(feats) -> torch.Tensor:
    """Reduce a backbone output to one vector per image, (B, C).

    * tuple/list (several stages or outputs): the last one is used;
    * (B, C, H, W) or (B, C, D, H, W) feature maps: global average
      pooling;
    * (B, N, C) tokens: the first (CLS) token;
    * (B, C): returned as is.
    """
    if isinstance(feats, (list, tuple)):
        feats = feats[-1]
        if isinstance(feats, (list, tuple)):  # e.g. [patch_tokens, cls]
            feats = feats[-1]
    if feats.dim() in (4, 5):
        return feats.flatten(2).mean(dim=2)
    if feats.dim() == 3:
        return feats[:, 0]
    if feats.dim() == 2:
        return feats
    raise ValueError(f'Cannot pool features of shape {tuple(feats.shape)}')


@torch.no_grad()
def batch_features(
    model: torch.nn.Module,
    data_batch: dict,
    feature_fn: Callable | None = None,
) -> torch.Tensor:
    """Features of one collated batch, (B, C), on the model's device.

    Args:
        model: an mmengine ``BaseModel`` (possibly wrapped by DDP).
        data_batch (dict): A batch from the dataloader.
        feature_fn (callable, optional): ``fn(model, inputs) -> output``;
            defaults to ``model(inputs, mode='tensor')``.
    """
    module = getattr(model, 'module', model)
    data = module.data_preprocessor(data_batch, False)
    inputs = data['inputs']
    if feature_fn is None:
        out = module(inputs, mode='tensor')
    else:
        out = feature_fn(module, inputs)
    return pool_features(out)


def extract_features(
    model: torch.nn.Module,
    dataloader: Iterable,
    feature_fn: Callable | None = None,
    desc: str = 'extracting features',
) -> tuple[torch.Tensor, list]:
    """Features (cpu, (N, C)) and data samples of every batch, this rank.

    A progress bar is shown on the main process.
    """
    was_training = model.training
    model.eval()
    feats: list = []
    samples: list = []
    try:
        total = len(dataloader)  # type: ignore[arg-type]
    except TypeError:
        total = None
    bar = progress(
        dataloader,
        total=total,
        desc=desc,
        disable=not is_main_process(),
        leave=False,
    )
    for data_batch in bar:
        feats.append(batch_features(model, data_batch, feature_fn).cpu())
        batch_samples: Sequence = data_batch.get('data_samples', [])
        samples.extend(batch_samples)
    model.train(was_training)
    if not feats:
        return torch.zeros(0, 0), samples
    return torch.cat(feats), samples
