"""Save pictures of what the model sees: every crop of N samples.

    python tools/analysis_tools/browse_dataset.py CONFIG [--output-dir DIR]
        [-n N] [--data-root DIR ...] [--cfg-options k=v ...]

MMSelfSup's ``--not-show`` and ``--show-interval`` are accepted (pictures
are always saved, never shown); ``--output-dir`` defaults to
``work_dirs/<config name>/browse_dataset``.

One PNG per sample: global crops on the first row (with the iBOT mask
drawn over masked patches when the pipeline makes masks), local crops on
the second row, all at their pixel size relative to each other. Images
are decoded as in training (``LoadImageRobust``: 8/16-bit, grey, any
size; or the pipeline's ``LoadMultiChannelTiff``, whose C-channel views
are drawn as a colour composite: channel 0 blue, 1 green, 2 red,
3 magenta, 4 cyan, 5 yellow, added); bad files are named and skipped.
"""

import argparse
import os
import os.path as osp

import numpy as np


def _to_hwc(t, bgr=True):
    img = t.numpy() if hasattr(t, 'numpy') else np.asarray(t)
    img = np.transpose(img, (1, 2, 0)) if img.ndim == 3 else img
    if img.ndim == 3 and (
        img.shape[-1] not in (1, 3) or img.dtype != np.uint8
    ):
        # a multi-channel view (e.g. LoadMultiChannelTiff's float32): a
        # colour composite, channel 0 blue, 1 green, 2 red, 3 magenta, ...
        from mmssl.visualization.images import channels_to_rgb

        return channels_to_rgb(img)
    if img.shape[-1] == 1:
        img = np.repeat(img, 3, -1)
    return img[..., ::-1] if bgr else img


def overlay_mask(img: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Tint masked patches red and darken them; returns a copy."""
    h, w = img.shape[:2]
    hp, wp = mask.shape
    ph, pw = h // hp, w // wp
    big = np.kron(mask.astype(np.uint8), np.ones((ph, pw), np.uint8))
    full = np.zeros((h, w), bool)
    full[: big.shape[0], : big.shape[1]] = big.astype(bool)
    out = img.astype(np.float32).copy()
    out[full] = out[full] * 0.45 + np.array([255, 0, 0]) * 0.55
    return out.astype(np.uint8)


def save_sample(data: dict, path: str, bgr: bool = True) -> None:
    """Draw one packed sample (``inputs`` list + ``data_samples``)."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    inputs = data['inputs']
    inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    sample = data['data_samples']
    num_global = int(sample.get('num_global_crops', 0) or 0)
    mask = sample.get('mask', None)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim == 2:
            mask = mask[None]
        num_global = num_global or len(mask)
    num_global = num_global or min(2, len(inputs))
    views = [_to_hwc(t, bgr) for t in inputs]
    globals_, locals_ = views[:num_global], views[num_global:]
    if mask is not None:
        globals_ = [
            overlay_mask(v, m) if m.any() else v
            for v, m in zip(globals_, mask)
        ]
    rows = [r for r in (globals_, locals_) if r]
    ncols = max(len(r) for r in rows)
    gh = globals_[0].shape[0]
    fig, axes = plt.subplots(
        len(rows), ncols, squeeze=False, figsize=(2.2 * ncols, 2.4 * len(rows))
    )
    for r, row in enumerate(rows):
        for c in range(ncols):
            ax = axes[r][c]
            ax.axis('off')
            if c < len(row):
                v = row[c]
                ax.imshow(v, extent=(0, v.shape[1], v.shape[0], 0))
                ax.set_xlim(0, gh)
                ax.set_ylim(gh, 0)
                kind = 'global' if r == 0 and num_global else 'local'
                extra = ''
                if kind == 'global' and mask is not None and c < len(mask):
                    extra = f' mask {mask[c].mean():.0%}'
                ax.set_title(
                    f'{kind} {c} {v.shape[1]}x{v.shape[0]}{extra}', fontsize=7
                )
    name = osp.basename(str(sample.get('img_path', '')))
    fig.suptitle(name, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def parse_args(argv=None) -> argparse.Namespace:
    from mmssl.config.cli import add_cfg_options_arguments

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument(
        '--output-dir',
        default=None,
        help='folder for the pictures (default: '
        'work_dirs/<config name>/browse_dataset)',
    )
    parser.add_argument('-n', '--num', type=int, default=8)
    parser.add_argument(
        '--data-root',
        nargs='+',
        default=None,
        help="image folder(s) to browse instead of the config's data "
        '(sets train_dataloader.dataset.data_root)',
    )
    parser.add_argument(
        '--rgb', action='store_true', help='pipeline output is already RGB'
    )
    # MMSelfSup 1.x's flags: mmssl always saves pictures, never opens a
    # window, so these two are accepted and change nothing.
    parser.add_argument(
        '--not-show',
        action='store_true',
        help='accepted (MMSelfSup): pictures are saved, never shown',
    )
    parser.add_argument(
        '--show-interval',
        type=float,
        default=None,
        help='accepted (MMSelfSup): pictures are saved, never shown',
    )
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    if args.output_dir is None:
        stem = osp.splitext(osp.basename(args.config))[0]
        args.output_dir = osp.join('work_dirs', stem, 'browse_dataset')
    if args.show_interval is not None:
        print(
            'browse_dataset: --show-interval ignored: pictures are saved '
            f'to {args.output_dir}, not shown',
            flush=True,
        )
    return args


def build_dataset(cfg, data_root=None):
    """The training dataset; bad files are skipped, not fatal."""
    from mmssl.datasets.image_folder import robust_loading
    from mmssl.registry import DATASETS

    ds_cfg = cfg.train_dataloader.dataset
    if data_root:
        ds_cfg.data_root = data_root[0] if len(data_root) == 1 else data_root
    if ds_cfg.get('type') == 'ImageFolderDataset':
        ds_cfg.max_bad_ratio = 1.0  # browse the good ones, name the bad
    elif 'pipeline' in ds_cfg:  # e.g. CustomDataset: the robust decoder
        ds_cfg.pipeline = robust_loading(ds_cfg.pipeline)
    return DATASETS.build(ds_cfg)


def _samples(dataset, n: int):
    """Yield ``(index, sample)``; bad files are named (once) and skipped.

    The dataset's own log line for a file it skipped is left out
    (:func:`_quiet_dataset_skips`): this one names it.
    """
    from tqdm import tqdm

    from mmssl.datasets.image_folder import BAD_FILE_ERRORS

    seen, named, i = set(), set(), 0
    bar = tqdm(total=n, desc='browse', unit='img', leave=False)

    def name_once(path, reason):  # a stand-in search meets it again
        if path not in named:
            named.add(path)
            print(f'skipped bad file {path}: {reason}')

    while len(seen) < n and i < len(dataset):
        try:
            data = dataset[i]
        except BAD_FILE_ERRORS as err:
            path = getattr(err, 'path', None) or str(i)
            name_once(path, getattr(err, 'reason', None) or str(err))
            i += 1
            continue
        i += 1
        sample = data['data_samples']
        for path, reason in sample.get('skipped_files', None) or []:
            name_once(path, reason)
        key = sample.get('img_path', i)
        if key in seen:  # a bad file's stand-in, drawn already
            continue
        seen.add(key)
        bar.update(1)
        yield len(seen) - 1, data
    bar.close()


def _quiet_dataset_skips() -> None:
    """Leave out the dataset's "Skipping bad image file" log records: the
    tool names each bad file itself, once."""
    from mmengine.logging import MMLogger

    MMLogger.get_current_instance().addFilter(
        lambda record: (
            not record.getMessage().startswith('Skipping bad image file')
        )
    )


def main(argv=None):
    args = parse_args(argv)
    from mmssl.config import load_config
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    cfg = load_config(
        args.config, args.cfg_options, args.allow_new_keys, exit_on_error=True
    )
    dataset = build_dataset(cfg, args.data_root)
    _quiet_dataset_skips()
    os.makedirs(args.output_dir, exist_ok=True)
    n = min(args.num, len(dataset))
    count = 0
    for i, data in _samples(dataset, n):
        path = osp.join(args.output_dir, f'sample_{i:04d}.png')
        save_sample(data, path, bgr=not args.rgb)
        count += 1
    print(f'Saved {count} pictures to {args.output_dir}')
    return count


if __name__ == '__main__':
    main()
