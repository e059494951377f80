"""What the demo learns-tests share: one torch thread, and a hook that
stops a demo early with its schedules unchanged.

Import ``one_thread`` into a test module to make it autouse there
(``from _learns import StopAfter, one_thread  # noqa: F401``).
"""

import pytest
import torch
from mmengine.hooks import Hook


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread, as the learns-tests' figures were measured:
    training rounds differently with two (the NPID demo reached 74.09
    instead of 78.55 with two threads, e.g. under ``pytest -n 0``)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class StopAfter(Hook):
    """Ends the run after ``epochs`` epochs; every schedule stays that of
    the whole run (the learning rate, momentum and weight decay reach
    epoch ``epochs`` of it, not its end)."""

    def __init__(self, epochs: int):
        self.epochs = epochs

    def after_train_epoch(self, runner):
        if runner.epoch + 1 >= self.epochs:  # counted after this hook
            runner.train_loop.stop_training = True
