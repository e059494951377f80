"""Images/s of a config's train pipeline vs an equivalent torchvision one.

    python tools/analysis_tools/benchmark_pipeline.py CONFIG
        [--num-images N] [--warmup W] [--repeats R] [--workers 1 4]
        [--make-synthetic DIR]
        [--cfg-options k=v ...]

Both pipelines read the same files through a torch DataLoader (batch 1,
no collation) with each number of workers. Each measure is a fresh loader
that first reads ``--warmup`` untimed images (workers started, prefetch
full), then times ``--num-images``; the two pipelines take turns for
``--repeats`` rounds, the order flipping every round, after one read of
every file (page cache warm for both). Printed: median images/s of each
side, the median of the per-round speed-ups, and the min-max spreads.
The torchvision version is built from the config's ``MultiCrop``
settings: PIL decoding, then per view
torchvision ``RandomResizedCrop`` / ``RandomHorizontalFlip`` /
``ColorJitter`` (p=0.8) / ``RandomGrayscale`` / ``GaussianBlur`` (same
per-view probabilities) / ``RandomSolarize`` and ``PILToTensor``.
``--make-synthetic DIR`` first writes N 1920x1080 JPEGs to DIR (once) and
points ``train_dataloader.dataset.data_root`` at it.
"""

import argparse
import os
import os.path as osp
import statistics
import time

import numpy as np


def make_synthetic(folder: str, num: int, size=(1080, 1920)) -> None:
    """Write ``num`` smooth random colour JPEGs of ``size`` (h, w)."""
    import cv2

    os.makedirs(folder, exist_ok=True)
    rng = np.random.RandomState(0)
    for i in range(num):
        path = osp.join(folder, f'synthetic_{i:05d}.jpg')
        if osp.exists(path):
            continue
        small = rng.randint(0, 256, (size[0] // 40, size[1] // 40, 3))
        img = cv2.resize(
            small.astype(np.uint8),
            (size[1], size[0]),
            interpolation=cv2.INTER_CUBIC,
        )
        noise = rng.randint(-12, 13, img.shape)
        img = np.clip(img.astype(int) + noise, 0, 255).astype(np.uint8)
        cv2.imwrite(path, img, [cv2.IMWRITE_JPEG_QUALITY, 90])


class TorchvisionMultiCrop:
    """The same multi-crop recipe with torchvision transforms on PIL."""

    def __init__(self, mc) -> None:
        from torchvision import transforms as T

        def view(size, scale, blur_p, sol_p):
            ops = [
                T.RandomResizedCrop(
                    size,
                    scale=scale,
                    ratio=mc.ratio,
                    interpolation=T.InterpolationMode.BILINEAR,
                ),
                T.RandomHorizontalFlip(mc.flip_prob),
                T.RandomApply(
                    [T.ColorJitter(*mc.color_jitter)], p=mc.color_jitter_prob
                ),
                T.RandomGrayscale(mc.grayscale_prob),
            ]
            if blur_p > 0:
                k = mc.blur_kernel_size or 9
                ops.append(
                    T.RandomApply(
                        [T.GaussianBlur(k, sigma=mc.blur_sigma)], p=blur_p
                    )
                )
            if sol_p > 0:
                ops.append(T.RandomSolarize(mc.solarize_threshold, p=sol_p))
            ops.append(T.PILToTensor())
            return T.Compose(ops)

        self.views = [
            view(mc.global_size, mc.global_scale, b, s)
            for b, s in zip(mc.global_blur_prob, mc.global_solarize_prob)
        ] + [
            view(mc.local_size, mc.local_scale, b, s)
            for b, s in zip(mc.local_blur_prob, mc.local_solarize_prob)
        ]

    def __call__(self, img):
        return [v(img) for v in self.views]


class _TVDataset:
    def __init__(self, paths, transform):
        self.paths, self.transform = paths, transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from PIL import Image

        with Image.open(self.paths[i]) as im:
            img = im.convert('RGB')
        return self.transform(img)


def _identity(batch):
    return batch


def timed_pass(dataset, indices, warm: int, workers: int) -> float:
    """Seconds to read ``indices`` after ``warm`` untimed samples.

    A fresh DataLoader per pass: its workers start, prefetch and reach a
    steady state during the warm-up samples, and no other loader's
    workers are alive while it is timed.
    """
    import torch
    from torch.utils.data import DataLoader, Subset

    warm_idx = [indices[i % len(indices)] for i in range(warm)]
    loader = DataLoader(
        Subset(dataset, warm_idx + list(indices)),
        batch_size=1,
        num_workers=workers,
        collate_fn=_identity,
        shuffle=False,
        prefetch_factor=2 if workers else None,
    )
    torch.set_num_threads(1)
    it = iter(loader)
    for _ in range(warm):
        next(it)
    start = time.perf_counter()
    for _ in it:
        pass
    return time.perf_counter() - start


def compare(sides: dict, indices, warm: int, workers: int, repeats: int):
    """Images/s of each side, ``repeats`` times, interleaved.

    The sides take turns, the order flipping every repeat, so that a
    change of machine load hits them alike.

    Returns:
        dict: side name -> list of images/s, one per repeat.
    """
    names = list(sides)
    rates = {name: [] for name in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            seconds = timed_pass(sides[name], indices, warm, workers)
            rates[name].append(len(indices) / seconds)
    return rates


def spread(values) -> str:
    return f'{min(values):.1f}-{max(values):.1f}'


def report_row(workers: int, rates: dict) -> str:
    """``workers  median  median  ratio  (spreads)`` for one setting."""
    ours = rates['mmssl']
    theirs = rates.get('torchvision')
    med = statistics.median(ours)
    if not theirs:
        return (
            f'{workers:>8} {med:>12.1f} {"-":>18} {"-":>9}  [{spread(ours)}]'
        )
    ratios = [a / b for a, b in zip(ours, theirs)]
    return (
        f'{workers:>8} {med:>12.1f} {statistics.median(theirs):>18.1f} '
        f'{statistics.median(ratios):>8.2f}x  [mmssl {spread(ours)}, '
        f'torchvision {spread(theirs)}, ratio '
        f'{min(ratios):.2f}-{max(ratios):.2f}]'
    )


def warm_page_cache(paths) -> None:
    """Read every file once so neither side pays the first disk read."""
    for path in paths:
        with open(path, 'rb') as f:
            while f.read(1 << 20):
                pass


def main(argv=None):
    from mmssl.config import add_cfg_options_arguments, load_config

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('--num-images', type=int, default=60)
    parser.add_argument('--warmup', type=int, default=None)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--make-synthetic', metavar='DIR')
    parser.add_argument('--skip-torchvision', action='store_true')
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)

    import cv2

    cv2.setNumThreads(1)  # one core per DataLoader worker, like PIL
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    from mmssl.datasets.transforms import MultiCrop
    from mmssl.registry import DATASETS, TRANSFORMS

    cfg_options = dict(args.cfg_options or {})
    if args.make_synthetic:
        make_synthetic(args.make_synthetic, args.num_images)
        cfg_options.setdefault(
            'train_dataloader.dataset.data_root', args.make_synthetic
        )
    cfg = load_config(
        args.config, cfg_options, args.allow_new_keys, exit_on_error=True
    )
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    paths = (
        [dataset.get_img_path(i) for i in range(len(dataset))]
        if hasattr(dataset, 'get_img_path')
        else [
            dataset.get_data_info(i)['img_path'] for i in range(len(dataset))
        ]
    )
    mc_cfg = next(
        (
            t
            for t in cfg.train_dataloader.dataset.get('pipeline', [])
            if t.get('type') == 'MultiCrop'
        ),
        dict(type='MultiCrop'),
    )
    mc = TRANSFORMS.build(mc_cfg)
    assert isinstance(mc, MultiCrop)
    tv = _TVDataset(paths, TorchvisionMultiCrop(mc))
    print(
        f'{len(paths)} files; {mc.num_global_crops} x {mc.global_size} + '
        f'{mc.num_local_crops} x {mc.local_size} crops; '
        f'{args.num_images} images per measure; cores: {os.cpu_count()}; '
        f'load average {os.getloadavg()[0]:.2f}'
    )
    indices = list(range(min(args.num_images, len(paths))))
    warm_page_cache([paths[i] for i in indices])
    sides = dict(mmssl=dataset)
    if not args.skip_torchvision:
        sides['torchvision'] = tv
    print(
        f'{"workers":>8} {"mmssl img/s":>12} {"torchvision img/s":>18} '
        f'{"speed-up":>9}  [min-max over {args.repeats} interleaved '
        'repeats]'
    )
    for w in args.workers:
        warm = args.warmup if args.warmup is not None else 2 * max(w, 1)
        rates = compare(sides, indices, warm, w, args.repeats)
        print(report_row(w, rates), flush=True)


if __name__ == '__main__':
    main()
