"""Online RankMe: a label-free figure of the features during pretraining."""

import copy
import time

import torch
from mmengine.dist import broadcast_object_list, is_main_process
from mmengine.logging import print_log

from mmssl.engine.runner.feature_extraction import extract_features
from mmssl.evaluation.folders import (
    config_loader,
    config_types,
    eval_img_size,
    eval_pipeline,
    train_dataset_cfg,
    volume_eval_dataset,
    volume_types,
)
from mmssl.evaluation.metrics.rank_metric import (
    COLLAPSE_CHECKS,
    COLLAPSE_RANKME,
)
from mmssl.evaluation.rank import evenly_spaced, rank_metrics
from mmssl.registry import DATASETS, HOOKS

from .feature_eval_hook import (
    FeatureEvalHook,
    build_eval_loader,
    gather_results,
    kept_modes,
)


def rising(value: float, best: float | None) -> bool:
    """Whether RankMe ``value`` rose above its ``best`` earlier value:
    its excess over 1 grew by 10 % and by 0.001 at least. From a
    near-constant start (a ViT with LayerScale at random init) it rises
    slowly: the DINOv2 CPU preset on 200 digits gave 1.0006, 1.0059,
    1.0377, 1.1001 ... 1.5533 over 10 epochs while its kNN rose from 10 to
    48 %; on 1438 digits 1.00, 1.38, 6.90 ... 26.74."""
    if best is None:
        return False
    return value - 1 > 1.1 * (best - 1) + 1e-3


def _with_pipeline(cfg, pipeline: list):
    """A copy of a dataset config with every ``pipeline`` in it (dataset
    wrappers' included) replaced by ``pipeline``."""
    if isinstance(cfg, dict):
        return {
            key: copy.deepcopy(pipeline)
            if key == 'pipeline'
            else _with_pipeline(value, pipeline)
            for key, value in cfg.items()
        }
    if isinstance(cfg, (list, tuple)):
        return type(cfg)(_with_pipeline(item, pipeline) for item in cfg)
    return copy.deepcopy(cfg)


@HOOKS.register_module()
class RankMeHook(FeatureEvalHook):
    """RankMe and spread of the features of a fixed set of images, online.

    RankMe (Garrido et al. 2023, https://arxiv.org/abs/2210.02885) is the
    effective rank of the (N, D) matrix of one feature per image
    (:mod:`mmssl.evaluation.rank`): 1 when every image gives the same
    direction (collapse), at most min(N, D). It needs no labels, so it is
    the figure of a run on one's own unlabelled folder, where there is no
    kNN or probe. Higher is better only within one method and backbone;
    compare with the value before training (``eval_before_train``),
    shown next to every later one.

    By default the images are those of the training dataset (every
    ``pipeline`` in its config replaced by :func:`eval_pipeline`: resize,
    centre crop at :func:`eval_img_size` of the config, the config's
    multi-channel loader if it has one); ``max_images`` evenly spaced ones
    are used, the same at every evaluation. Features and ranks are those
    of :class:`FeatureEvalHook`: the teacher's backbone when there is one,
    each rank extracts its shard, rank 0 computes. Logs ``rank/rankme``,
    ``rank/rankme_fraction``, ``rank/spread`` and ``rank/time`` to the
    message hub and every visualizer backend, and warns when RankMe is
    below :data:`COLLAPSE_RANKME` after training started and not rising
    (at random init a ViT with LayerScale gives every image about the same
    feature), or falls to less than half its best value.

    Args:
        dataloader (dict, optional): Dataloader config of the images;
            default: the training dataset with the evaluation pipeline
            (volumes: the dataset's loading ``preprocess``, then their
            centre cube at the backbone's size). ``sampler`` defaults to
            a non-shuffling ``DefaultSampler``.
        max_images (int): Images used at most. Defaults to 1024.
        interval (int): Evaluate every ``interval`` epochs (``by_epoch``)
            or iterations. Defaults to 1.
        by_epoch (bool): Count epochs rather than iterations.
            Defaults to True.
        eval_before_train (bool): Also evaluate before training starts
            (the random-init baseline). Defaults to True.
        batch_size (int): Batch size of the default dataloader.
            Defaults to 64.
        backbone_path (str, optional): Dotted path of the module to
            evaluate (its output is pooled). Defaults to None.
        prefer_teacher (bool): Use the teacher's backbone when there is
            one. Defaults to True.
        prefix (str): Name prefix of the logged scalars.
            Defaults to 'rank'.
    """

    def __init__(
        self,
        dataloader: dict | None = None,
        max_images: int = 1024,
        interval: int = 1,
        by_epoch: bool = True,
        eval_before_train: bool = True,
        batch_size: int = 64,
        backbone_path: str | None = None,
        prefer_teacher: bool = True,
        prefix: str = 'rank',
    ) -> None:
        super().__init__(
            interval=interval,
            by_epoch=by_epoch,
            backbone_path=backbone_path,
            prefer_teacher=prefer_teacher,
            eval_before_train=eval_before_train,
            prefix=prefix,
        )
        if max_images < 2:
            raise ValueError(
                f'RankMe needs at least 2 images, got max_images={max_images}'
            )
        if batch_size < 1:
            raise ValueError(f'batch_size must be >= 1, got {batch_size}')
        self.loader_cfg = copy.deepcopy(dataloader)
        self.max_images = max_images
        self.batch_size = batch_size
        self._loader = None
        self.indices: list[int] = []
        self.start: tuple[float, str] | None = None  # (value, name)
        self.best: tuple[float, str] | None = None  # (value, step name)
        self._at_start = False  # evaluating in before_train

    # ------------------------------------------------------------ data
    def default_dataloader(self, cfg) -> dict:
        """The dataloader config used when none is given: ``cfg``'s
        training dataset, every ``pipeline`` replaced by the evaluation
        pipeline at the config's size (:func:`eval_pipeline`; volumes:
        :func:`volume_eval_dataset`).

        Raises:
            ValueError: The config has no training dataset.
        """
        train = dict(cfg.get('train_dataloader') or {})
        dataset = train.get('dataset')
        if not dataset:
            raise ValueError(
                'RankMeHook: the config has no train_dataloader.dataset; '
                'give the images with RankMeHook(dataloader=...).'
            )
        size, _ = eval_img_size(cfg)
        if volume_types(dataset):  # loaded by the dataset's preprocess
            dataset = volume_eval_dataset(train_dataset_cfg(cfg), size)
        else:
            pipeline = eval_pipeline(size, loader=config_loader(cfg))
            dataset = _with_pipeline(dataset, pipeline)
        return dict(
            batch_size=self.batch_size,
            num_workers=train.get('num_workers', 0),
            dataset=dataset,
        )

    def _build_loader(self, runner):
        if self._loader is not None:
            return self._loader
        cfg = copy.deepcopy(self.loader_cfg)
        if cfg is None:
            cfg = self.default_dataloader(runner.cfg)
        dataset = cfg['dataset']
        if isinstance(dataset, dict):
            dataset = DATASETS.build(dataset)
        if hasattr(dataset, 'full_init'):
            dataset.full_init()
        self.indices = evenly_spaced(len(dataset), self.max_images)
        if len(self.indices) < 2:
            raise ValueError(
                f'RankMeHook needs at least 2 images, the dataset has '
                f'{len(self.indices)}.'
            )
        cfg['dataset'] = torch.utils.data.Subset(dataset, self.indices)
        self._loader = build_eval_loader(cfg, seed=runner.seed)
        return self._loader

    def before_train(self, runner) -> None:
        if self.loader_cfg is None:  # refuse a config without data early
            self.default_dataloader(runner.cfg)
        self._at_start = True
        try:
            super().before_train(runner)
        finally:
            self._at_start = False

    # ------------------------------------------------------------ figures
    def _features(self, runner) -> tuple[torch.Tensor | None, str]:
        """The (N, D) features on rank 0 (None elsewhere), their source."""
        loader = self._build_loader(runner)
        model = runner.model
        fn, source = self._feature_fn(model)
        with kept_modes(model):
            feats, _ = extract_features(model, loader, fn, desc='RankMe')
        gathered = gather_results(list(feats), len(loader.dataset))
        if not is_main_process():
            return None, source
        return torch.stack(gathered).float(), source

    @staticmethod
    def _start_name(runner) -> str:
        """What the before-training value measures."""
        model_cfg = runner.cfg.get('model') or {}
        if (
            runner.iter > 0
            or runner.cfg.get('load_from')
            or model_cfg.get('warm_start')
            or 'Pretrained' in config_types(model_cfg)
        ):
            return 'at start'
        return 'random init'

    @torch.no_grad()
    def evaluate(self, runner, step: int | None = None) -> dict:
        """Compute, log and return ``rank/rankme``, ``rank/rankme_fraction``,
        ``rank/spread`` and ``rank/time``.

        Args:
            runner (Runner): The runner.
            step (int, optional): Epoch (``by_epoch``) or iteration shown
                in the log.
        """
        begin = time.perf_counter()
        feats, source = self._features(runner)
        out = [None]
        if feats is not None:
            out = [rank_metrics(feats)]
        broadcast_object_list(out)
        figures = out[0]
        names = ('rankme', 'rankme_fraction', 'spread')
        result = {f'{self.prefix}/{n}': figures[n] for n in names}
        result[f'{self.prefix}/time'] = time.perf_counter() - begin
        step = self._resolve_step(step, runner)
        self._log_scalars(runner, result)
        self._report(runner, figures, source, step)
        self.last_metrics = result
        return result

    def _report(self, runner, figures: dict, source: str, step: int) -> None:
        value = figures['rankme']
        where = self._step_name(step)
        if self._at_start:
            self.start = (value, self._start_name(runner))
            shown = f' ({self.start[1]})'
        elif self.start is not None:
            shown = f' ({self.start[1]} {self.start[0]:.2f})'
        else:
            shown = ''
        n, d = int(figures['images']), int(figures['dim'])
        print_log(
            f'RankMe {value:.2f}{shown} of at most {min(n, d)}, spread '
            f'{figures["spread"]:.3f}, {n} images, features from {source} '
            f'at {where}',
            logger='current',
        )
        if value < COLLAPSE_RANKME and self._at_start and runner.iter == 0:
            print_log(
                f'RankMe is {value:.2f} before training: every image gives '
                'about the same feature (e.g. LayerScale starts the blocks '
                'as near-identities). It should rise in the first epochs.',
                logger='current',
            )
        elif value < COLLAPSE_RANKME and not rising(
            value, self.best[0] if self.best else None
        ):  # rising from a near-constant start is learning
            print_log(
                f'RankMe is {value:.2f} at {where}: the features of all '
                f'images lie on about one direction (collapse). '
                f'{COLLAPSE_CHECKS}',
                logger='current',
                level=30,
            )
        if self.best is not None and value < self.best[0] / 2:
            print_log(
                f'RankMe fell to {value:.2f} at {where}, less than half its '
                f'best {self.best[0]:.2f} (at {self.best[1]}): the features '
                f'are collapsing. {COLLAPSE_CHECKS}',
                logger='current',
                level=30,
            )
        if self.best is None or value > self.best[0]:
            self.best = (value, where)
