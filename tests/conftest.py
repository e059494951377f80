"""Shared fixtures: the demo dataset, made once per test session."""

import os
import os.path as osp
import sys

import pytest

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
# shared test helpers (``import _dist``), whatever pytest's import mode
TESTS = osp.dirname(osp.abspath(__file__))
if TESTS not in sys.path:
    sys.path.insert(1, TESTS)

# Keep torch from fighting over the CI machine's two cores: one thread per
# pytest-xdist worker (pyproject.toml runs two), two without workers. The
# workers inherit the controller's OMP_NUM_THREADS=2, so they set theirs.
if os.environ.get('PYTEST_XDIST_WORKER'):
    import torch

    os.environ['OMP_NUM_THREADS'] = '1'
    torch.set_num_threads(1)
else:
    os.environ.setdefault('OMP_NUM_THREADS', '2')


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """Give every test the thread count it started with: tools run
    in-process (benchmark_train sets cores / processes) changed it for all
    later tests of the worker, and with it the float results of training
    (the NPID learns-test lost 4 kNN points with 2 threads)."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope='session')
def demo_data_root(tmp_path_factory) -> str:
    """Folder with the demo digits: ``train/<cls>/*.png``, ``val/...``."""
    sys.path.insert(0, osp.join(ROOT, 'tools', 'misc'))
    from make_demo_dataset import make_demo_dataset

    root = str(tmp_path_factory.mktemp('demo'))
    make_demo_dataset(root)
    return root


@pytest.fixture(scope='session')
def volume_data_root(tmp_path_factory) -> str:
    """A tiny labelled synthetic volume set (``train/<cls>/*``, ``val``)."""
    sys.path.insert(0, osp.join(ROOT, 'tools', 'misc'))
    from make_volume_dataset import make_dataset

    root = str(tmp_path_factory.mktemp('volumes'))
    make_dataset(root, size=32, train_per_class=2, val_per_class=1)
    return root


@pytest.fixture(scope='session')
def multichannel_data_root(tmp_path_factory) -> str:
    """A tiny labelled 5-channel 16-bit TIFF set (``train/<cls>/*.tif``,
    ``val/...``; 2 and 1 images per class)."""
    pytest.importorskip('tifffile')
    sys.path.insert(0, osp.join(ROOT, 'tools', 'misc'))
    from make_multichannel_dataset import make_dataset

    root = str(tmp_path_factory.mktemp('multichannel'))
    make_dataset(root, size=32, train_per_class=2, val_per_class=1)
    return root


@pytest.fixture(scope='session', autouse=True)
def _register_modules():
    from mmssl.utils import register_all_modules

    register_all_modules()
