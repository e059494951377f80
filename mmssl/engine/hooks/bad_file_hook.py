"""Count the bad image files skipped by the datasets, across processes."""

from typing import Dict, List, Optional, Sequence, Tuple

from mmengine.dist import all_gather_object, get_dist_info
from mmengine.hooks import Hook

from mmssl.registry import HOOKS


def collect_skipped(data_samples: Optional[Sequence]) -> List[Tuple]:
    """``(path, reason)`` pairs carried by a batch's data samples.

    :class:`~mmssl.datasets.ImageFolderDataset` attaches the files it
    skipped to produce a sample as ``skipped_files`` metainfo. The sample
    travels from the DataLoader worker process to the training process,
    so counting there sees the work of every worker.
    """
    out = []
    for s in data_samples or []:
        out.extend(tuple(x) for x in (s.get('skipped_files', None) or []))
    return out


class BadFileCounter:
    """Distinct bad files and samples seen, merged over ranks on demand."""

    def __init__(self) -> None:
        self.bad: Dict[str, str] = {}
        self.new: Dict[str, str] = {}
        self.samples = 0
        self.pending_samples = 0

    def update(self, data_samples) -> None:
        for path, reason in collect_skipped(data_samples):
            if path not in self.bad and path not in self.new:
                self.new[path] = reason
        self.pending_samples += len(data_samples or [])

    def sync(self) -> List[Tuple[str, str]]:
        """Gather new entries from all ranks; return the newly seen ones."""
        gathered = all_gather_object((self.new, self.pending_samples))
        fresh = []
        for new, n in gathered:
            self.samples += n
            for path, reason in new.items():
                if path not in self.bad:
                    self.bad[path] = reason
                    fresh.append((path, reason))
        self.new, self.pending_samples = {}, 0
        return fresh

    def state_dict(self) -> Dict:
        """Everything counted so far, as builtins (this rank's unsynced
        entries folded in: a resume must not count them twice)."""
        bad = dict(self.bad)
        for path, reason in self.new.items():
            bad.setdefault(path, reason)
        return dict(bad=bad, samples=self.samples + self.pending_samples)

    def load_state_dict(self, state: Dict) -> None:
        """Continue counting from :meth:`state_dict`'s output."""
        self.bad = dict(state['bad'])
        self.samples = int(state['samples'])
        self.new, self.pending_samples = {}, 0


@HOOKS.register_module()
class BadFileSummaryHook(Hook):
    """Log and bound the bad files skipped during training.

    Every ``interval`` iterations and at each epoch end, the
    ``skipped_files`` of all ranks are gathered (a small
    ``all_gather_object``; every rank takes part, so none waits), rank 0
    logs each newly found file once with its reason and a running total
    (nothing when no new file was found; the run's summary gives the
    count),
    and when the distinct bad files exceed ``max_bad_ratio`` of the
    samples read, every rank raises the same error listing the first few.

    Args:
        interval (int): Iterations between gathers. Defaults to 50.
        max_bad_ratio (float): Defaults to 0.05.
    """

    priority = 'LOW'
    CKPT_KEY = 'bad_files'

    def __init__(self, interval: int = 50, max_bad_ratio: float = 0.05):
        self.interval = interval
        self.max_bad_ratio = max_bad_ratio
        self.counter = BadFileCounter()
        self._loaded: Optional[Dict] = None

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        # Saved by rank 0 only: other ranks' files found since the last
        # gather are counted again after a resume, when seen again.
        checkpoint[self.CKPT_KEY] = self.counter.state_dict()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        self._loaded = checkpoint.get(self.CKPT_KEY)

    def before_train(self, runner) -> None:
        from mmssl.datasets.image_folder import ImageFolderDataset

        # each file once per run, here: the workers (forked after this)
        # log their skips at DEBUG level only
        ImageFolderDataset.hook_reports_bad_files = True
        # Only a resume (not ``load_from``) continues the counts; the
        # runner has set the iteration from the checkpoint by now.
        if self._loaded is not None and runner.iter > 0:
            self.counter.load_state_dict(self._loaded)
        self._loaded = None

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ) -> None:
        if data_batch is not None:
            self.counter.update(data_batch.get('data_samples'))
        if self.every_n_train_iters(runner, self.interval):
            self._sync(runner)

    def after_train_epoch(self, runner) -> None:
        self._sync(runner)

    def after_train(self, runner) -> None:
        from mmssl.datasets.image_folder import ImageFolderDataset

        ImageFolderDataset.hook_reports_bad_files = False

    def summary_line(self) -> Optional[str]:
        """The count for the run's summary, or None when none was bad."""
        c = self.counter
        if not c.bad:
            return None
        return (
            f'{len(c.bad)} bad image file(s) skipped over {c.samples} '
            f'samples (each warned about once, above)'
        )

    def _sync(self, runner) -> None:
        fresh = self.counter.sync()
        rank, _ = get_dist_info()
        c = self.counter
        for path, reason in fresh:
            runner.logger.warning(f'Bad image file skipped: {path}: {reason}')
        if fresh and c.bad:
            runner.logger.warning(
                f'{len(c.bad)} bad image file(s) skipped so far over '
                f'{c.samples} samples ({len(c.bad) / max(c.samples, 1):.2%}).'
            )
        if (
            c.samples
            and len(c.bad) > self.max_bad_ratio * max(c.samples, 1)
            and c.samples >= 100
        ):
            first = '\n'.join(
                f'  {p}: {r}' for p, r in list(c.bad.items())[:5]
            )
            raise RuntimeError(
                f'{len(c.bad)} bad image files in {c.samples} samples, more '
                f'than max_bad_ratio={self.max_bad_ratio}:\n{first}\nRun '
                'tools/misc/check_dataset.py CONFIG to list them all.'
            )
