"""The repository files on the call stack of one training step.

Runs ``tools/train.py CONFIG`` in this process under a profiler and
prints, the first time each is called, the stack of repository files
(tools/ and mmssl/, outermost first, with the functions of each) at

* the algorithm's ``loss`` (any ``loss`` method of mmssl/models/
  algorithms/), and
* the optimizer's ``step`` (torch.optim),

then the files of both walks together, and exits. It is the figure of
docs/dev/architecture.md::

    python tools/misc/make_demo_dataset.py data/demo
    python .dev_scripts/step_walk.py \\
        configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py

The data loader runs in the main process (``num_workers=0``), so that no
worker outlives the exit.
"""

import argparse
import os
import os.path as osp
import runpy
import sys

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
ALGORITHMS = osp.join(ROOT, 'mmssl', 'models', 'algorithms')


def repo_stack(frame) -> list:
    """``[(file, 'f,g'), ...]`` of the repository frames, outermost
    first; consecutive frames of one file are merged."""
    out = []
    while frame is not None:
        path = frame.f_code.co_filename
        rel = osp.relpath(path, ROOT)
        if rel.startswith(('tools' + os.sep, 'mmssl' + os.sep)):
            name = frame.f_code.co_name
            if out and out[-1][0] == rel:
                out[-1] = (rel, f'{name},{out[-1][1]}')
            else:
                out.append((rel, name))
        frame = frame.f_back
    return out[::-1]


def _target(code) -> str | None:
    path = code.co_filename
    if code.co_name == 'loss' and path.startswith(ALGORITHMS):
        return 'loss'
    if code.co_name == 'step' and f'{os.sep}torch{os.sep}optim{os.sep}' in (
        path
    ):
        if 'lr_scheduler' not in path:
            return 'optimizer step'
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('--work-dir', default='work_dirs/step_walk')
    args = parser.parse_args()
    seen = {}

    def profile(frame, event, arg):
        if event != 'call':
            return
        name = _target(frame.f_code)
        if name is None or name in seen:
            return
        seen[name] = repo_stack(frame)
        print(f'stack at the {name}:')
        for rel, funcs in seen[name]:
            print(f'  {rel}: {funcs}')
        if len(seen) == 2:
            files = sorted({rel for s in seen.values() for rel, _ in s})
            package = [f for f in files if f.startswith('mmssl')]
            print(f'{len(files)} files ({len(package)} of mmssl):')
            print('\n'.join(f'  {f}' for f in files), flush=True)
            os._exit(0)

    sys.argv = [
        osp.join(ROOT, 'tools', 'train.py'),
        args.config,
        '--work-dir',
        args.work_dir,
        '--cfg-options',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
    ]
    sys.setprofile(profile)
    runpy.run_path(sys.argv[0], run_name='__main__')
    sys.setprofile(None)
    print(f'did not reach both: {sorted(seen)}', file=sys.stderr)
    sys.exit(1)


if __name__ == '__main__':
    main()
