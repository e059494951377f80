"""Benchmarks of the data path: 16-bit pipeline, file index, worker memory.

    # 16-bit PNG multi-crop pipeline vs a torchvision/PIL reference
    python tools/analysis_tools/benchmark_data_path.py pipeline DIR \\
        [--num-images 8] [--repeats 5] [--max-side 1024]
    # folder index vs torchvision's ImageFolder on empty files
    python tools/analysis_tools/benchmark_data_path.py index DIR \\
        [--num-files 200000] [--repeats 3]
    # PSS of DataLoader workers holding 1M paths (see --help)
    python tools/analysis_tools/benchmark_data_path.py memory DIR \\
        [--num-paths 1000000] [--workers 4] [--mode table]

``pipeline`` writes ``--num-images`` synthetic 2124x2056 16-bit gray PNGs
to DIR once and times, in one process with one thread, interleaved per
image and repeat: ``reference`` (PIL decoding, a float32 min/max stretch
to 8 bits, ``convert('RGB')``, then a DINOv2-style multi-crop written
here with torchvision: 2 global 224 and 8 local 98 crops (bicubic, or
``--reference-interpolation bilinear``), flip, colour
jitter p=0.8, grayscale p=0.2, blur p=(1.0, 0.1, 0.5), solarize p=0.2 on
the second global view, ``PILToTensor``); ``mmssl`` (``LoadImageRobust``
+ ``MultiCrop`` with the same recipe + ``PackInputs``); ``mmssl-cache``
(the same with ``decode_cache=dict(dir=..., max_side=...)``, filled by
one untimed epoch). It prints the median ms per image, the spread
(25th-75th percentile) and the ratios of medians.
"""

import argparse
import gc
import os
import os.path as osp
import statistics
import tempfile
import time

import numpy as np


def make_16bit_pngs(folder: str, num: int, size=(2056, 2124)) -> list:
    """Write ``num`` smooth, noisy 16-bit gray PNGs of ``size`` (h, w)."""
    import cv2

    os.makedirs(folder, exist_ok=True)
    rng = np.random.RandomState(0)
    paths = []
    for i in range(num):
        path = osp.join(folder, f'sixteen_{i:04d}.png')
        paths.append(path)
        if osp.exists(path):
            continue
        small = rng.randint(0, 40000, (size[0] // 40, size[1] // 40))
        img = cv2.resize(
            small.astype(np.float32),
            (size[1], size[0]),
            interpolation=cv2.INTER_CUBIC,
        )
        img += rng.randint(-300, 301, img.shape) + 1000
        cv2.imwrite(path, np.clip(img, 0, 65535).astype(np.uint16))
    return paths


class ReferencePipeline:
    """A DINOv2-style multi-crop with torchvision on PIL (see module doc)."""

    def __init__(self, interpolation: str = 'bicubic') -> None:
        from torchvision import transforms as T

        interp = T.InterpolationMode(interpolation)

        def view(size, scale, blur_p, sol_p):
            ops = [
                T.RandomResizedCrop(
                    size,
                    scale=scale,
                    interpolation=interp,
                ),
                T.RandomHorizontalFlip(0.5),
                T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                T.RandomGrayscale(0.2),
                T.RandomApply([T.GaussianBlur(9, (0.1, 2.0))], p=blur_p),
            ]
            if sol_p:
                ops.append(T.RandomSolarize(128, p=sol_p))
            return T.Compose(ops + [T.PILToTensor()])

        self.views = [
            view(224, (0.32, 1.0), 1.0, 0.0),
            view(224, (0.32, 1.0), 0.1, 0.2),
        ] + [view(98, (0.05, 0.32), 0.5, 0.0)] * 8

    @staticmethod
    def load(path: str):
        from PIL import Image

        with Image.open(path) as im:
            arr = np.asarray(im)
        if arr.dtype != np.uint8:
            lo, hi = float(arr.min()), float(arr.max())
            arr = (arr.astype(np.float32) - lo) * (255.0 / max(hi - lo, 1))
            arr = np.clip(arr, 0, 255).astype(np.uint8)
        return Image.fromarray(arr).convert('RGB')

    def __call__(self, path: str):
        img = self.load(path)
        return [v(img) for v in self.views]


def build_mmssl(cache_dir=None, max_side=None):
    """LoadImageRobust + MultiCrop (same recipe) + PackInputs."""
    from mmcv.transforms import Compose

    from mmssl.setup_env import register_all_modules

    register_all_modules()
    load = dict(type='LoadImageRobust')
    if cache_dir is not None:
        load['decode_cache'] = dict(dir=cache_dir, max_side=max_side)
    elif max_side is not None:
        load['max_side'] = max_side
    pipeline = Compose(
        [
            load,
            dict(type='MultiCrop', local_size=98),
            dict(type='PackInputs', meta_keys=('img_path',)),
        ]
    )
    return lambda path: pipeline(dict(img_path=path))


def _summary(name: str, times: list) -> str:
    q = np.percentile(np.asarray(times) * 1e3, [25, 50, 75])
    return (
        f'{name:14s} median {q[1]:8.1f} ms  (p25 {q[0]:.1f}, p75 {q[2]:.1f})'
    )


def bench_pipeline(args) -> None:
    import cv2
    import torch

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    paths = make_16bit_pngs(args.dir, args.num_images)
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix='decode_cache_')
    sides = dict(
        reference=ReferencePipeline(args.reference_interpolation),
        mmssl=build_mmssl(),
    )
    if not args.no_cache_side:
        sides['mmssl-cache'] = build_mmssl(cache_dir, args.max_side)
    if args.max_side_no_cache:
        sides['mmssl-maxside'] = build_mmssl(None, args.max_side)
    first = []
    for p in paths:  # untimed warm-up; fills the cache (first epoch)
        for name, fn in sides.items():
            t = time.perf_counter()
            fn(p)
            if name == 'mmssl-cache':
                first.append(time.perf_counter() - t)
    times = {k: [] for k in sides}
    ratios = {k: [] for k in sides if k != 'reference'}
    names = list(sides)
    for r in range(args.repeats):
        for i, p in enumerate(paths):
            np.random.seed(r * 1000 + i)
            torch.manual_seed(r * 1000 + i)
            k = (r + i) % len(names)  # rotate who goes first
            one = {}
            for name in names[k:] + names[:k]:
                gc.collect()
                t = time.perf_counter()
                sides[name](p)
                one[name] = time.perf_counter() - t
                times[name].append(one[name])
            for name in ratios:
                ratios[name].append(one['reference'] / one[name])
    print(f'{len(paths)} images x {args.repeats} repeats, one thread')
    if first:
        print(_summary('first epoch', first) + '  (mmssl-cache, writes)')
    for name, ts in times.items():
        print(_summary(name, ts))
    ref = statistics.median(times['reference'])
    for name in ratios:
        print(
            f'speed-up {name:14s} {ref / statistics.median(times[name]):.2f}x'
            f' (ratio of medians; median of per-image ratios '
            f'{statistics.median(ratios[name]):.2f}x)'
        )


def make_empty_tree(root: str, num: int, per_dir: int = 1000) -> None:
    """``num`` empty image files in class folders of ``per_dir`` each."""
    if osp.isfile(osp.join(root, '.done')):
        return
    exts = ('.jpg', '.png', '.JPEG', '.tif')
    for i in range(num):
        d = osp.join(root, f'class_{i // per_dir:04d}')
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        open(osp.join(d, f'img_{i:07d}{exts[i % 4]}'), 'wb').close()
    open(osp.join(root, '.done'), 'wb').close()


def bench_index(args) -> None:
    from torchvision.datasets import ImageFolder

    from mmssl.datasets.image_folder import ImageFolderDataset
    from mmssl.datasets.image_index import scan_images

    make_empty_tree(args.dir, args.num_files)
    cache = osp.join(tempfile.mkdtemp(prefix='index_'), 'index.npz')
    sides = dict(
        torchvision=lambda: len(ImageFolder(args.dir, loader=str).samples),
        scan_images=lambda: len(scan_images(args.dir)),
        dataset=lambda: len(
            ImageFolderDataset(data_root=args.dir, with_label=True)
        ),
        dataset_cached=lambda: len(
            ImageFolderDataset(
                data_root=args.dir, with_label=True, cache_file=cache
            )
        ),
    )
    for fn in sides.values():  # warm the dentry cache and the index cache
        fn()
    times = {k: [] for k in sides}
    names = list(sides)
    for r in range(args.repeats):
        for name in names[r % 4 :] + names[: r % 4]:
            gc.collect()
            t = time.perf_counter()
            n = sides[name]()
            times[name].append(time.perf_counter() - t)
    print(f'{n} files, {args.repeats} interleaved repeats')
    for name, ts in times.items():
        print(f'{name:15s} median {statistics.median(ts):.3f} s  {ts}')


class _ListPaths:
    """Paths as a Python list of str (what torchvision's ImageFolder has)."""

    def __init__(self, paths) -> None:
        self.paths = list(paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> int:
        return len(self.paths[i])


class _TablePaths(_ListPaths):
    """Paths as an :class:`~mmssl.datasets.image_folder.PathTable`."""

    def __init__(self, table) -> None:
        self.paths = table


def _pss_kib(pid: int) -> dict:
    out = {}
    with open(f'/proc/{pid}/smaps_rollup') as f:
        for line in f:
            key, _, rest = line.partition(':')
            if key in ('Rss', 'Pss', 'Private_Clean', 'Private_Dirty'):
                out[key] = int(rest.split()[0])
    return out


def bench_memory(args) -> None:
    from torch.utils.data import DataLoader

    from mmssl.datasets.path_table import PathTable

    paths = [
        osp.join(args.dir, f'class_{i // 1000:04d}', f'img_{i:07d}.png')
        for i in range(args.num_paths)
    ]
    if args.mode == 'list':
        ds = _ListPaths(paths)
    else:
        table = PathTable(paths)
        if args.mode == 'mmap':
            file = osp.join(tempfile.mkdtemp(prefix='paths_'), 'paths.npz')
            table.save(file)
            table = PathTable.load(file, mmap=True)
        ds = _TablePaths(table)
    del paths
    gc.collect()
    loader = DataLoader(
        ds,
        batch_size=args.num_paths // (4 * args.workers),
        num_workers=args.workers,
        persistent_workers=True,
        multiprocessing_context=args.start_method,
        collate_fn=sum,
    )
    it = iter(loader)
    total = sum(it)  # every worker reads its share of all paths
    pids = [w.pid for w in it._workers]
    main = _pss_kib(os.getpid())
    per = [_pss_kib(p) for p in pids]
    mib = lambda k: sum(d[k] for d in per) / 1024 / len(per)  # noqa: E731
    print(
        f'{args.mode} ({args.start_method}), {args.num_paths} paths, '
        f'{args.workers} workers, checksum {total}: main PSS '
        f'{main["Pss"] / 1024:.1f} MiB; per worker PSS {mib("Pss"):.1f} MiB,'
        f' RSS {mib("Rss"):.1f} MiB, private '
        f'{(mib("Private_Clean") + mib("Private_Dirty")):.1f} MiB'
    )
    del it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('what', choices=['pipeline', 'index', 'memory'])
    parser.add_argument('dir', help='folder for the synthetic files')
    parser.add_argument('--num-images', type=int, default=8)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--max-side', type=int, default=1024)
    parser.add_argument('--cache-dir', default=None)
    parser.add_argument(
        '--max-side-no-cache',
        action='store_true',
        help='also time mmssl with max_side but without the cache',
    )
    parser.add_argument(
        '--no-cache-side',
        action='store_true',
        help='leave out mmssl-cache (e.g. to time an older checkout)',
    )
    parser.add_argument(
        '--reference-interpolation',
        choices=['bicubic', 'bilinear'],
        default='bicubic',
        help='RandomResizedCrop of the reference (DINOv2 uses bicubic)',
    )
    parser.add_argument('--num-files', type=int, default=200000)
    parser.add_argument('--num-paths', type=int, default=1000000)
    parser.add_argument('--workers', type=int, default=4)
    parser.add_argument(
        '--mode',
        choices=['list', 'table', 'mmap'],
        default='mmap',
        help='memory: list of str, in-memory PathTable, or memmapped file',
    )
    parser.add_argument(
        '--start-method', choices=['fork', 'spawn'], default='fork'
    )
    args = parser.parse_args()
    dict(pipeline=bench_pipeline, index=bench_index, memory=bench_memory)[
        args.what
    ](args)


if __name__ == '__main__':
    main()
