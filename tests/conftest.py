"""Shared fixtures: the demo dataset, made once per test session."""

import os
import sys

import pytest

from tests.support.tools import DEV_SCRIPTS, load_tool

# The development scripts' shared code (.dev_scripts/mmssl_dev) is not
# installed: its tests import it from beside the scripts, as they do.
if DEV_SCRIPTS not in sys.path:
    sys.path.append(DEV_SCRIPTS)

# Keep torch from fighting over the CI machine's two cores: one thread per
# pytest-xdist worker (pyproject.toml runs two), two without workers. The
# workers inherit the controller's OMP_NUM_THREADS=2, so they set theirs.
if os.environ.get('PYTEST_XDIST_WORKER'):
    import torch

    os.environ['OMP_NUM_THREADS'] = '1'
    torch.set_num_threads(1)
else:
    os.environ.setdefault('OMP_NUM_THREADS', '2')


def _shares_a_fixture(item) -> bool:
    """Whether the test uses a module- or class-scoped fixture (made once
    per worker that runs any test of its module)."""
    info = getattr(item, '_fixtureinfo', None)
    for name in getattr(item, 'fixturenames', ()):
        defs = info.name2fixturedefs.get(name) if info else None
        if defs and defs[-1].scope in ('module', 'class', 'package'):
            return True
    return False


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (each worker collects and orders alike), the
    ``slow`` tests first, and the tests of a module that share a module
    fixture in one group. pyproject.toml hands out one test or group at a
    time in this order (``--dist loadgroup --no-loadscope-reorder``): the
    minute-long end-to-end runs start early on whichever worker is free,
    the many short tests fill both workers to the end (longest first: the
    run ends within a short test of the busier worker, not a
    learns-test's length), and a module fixture such as test_tools_policy's
    11 s ``runs`` is made on one worker only. In one process (``-n 0``)
    the file order stays."""
    if not os.environ.get('PYTEST_XDIST_WORKER'):
        return
    for item in items:
        if _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    items.sort(key=lambda item: item.get_closest_marker('slow') is None)


# The versions a run tested, printed under pytest's own header line, so a
# CI log or a bug report says what pip resolved (README, "Tested versions").
HEADER_DISTRIBUTIONS = (
    'torch',
    'torchvision',
    'mmengine',
    'mmcv-lite',
    'mmcv',
    'mmpretrain',
    'onedl-mmengine',
    'onedl-mmcv',
    'onedl-mmpretrain',
)


def pytest_report_header(config) -> str:
    from importlib import metadata

    found = []
    for name in HEADER_DISTRIBUTIONS:
        try:
            found.append(f'{name}-{metadata.version(name)}')
        except metadata.PackageNotFoundError:
            pass
    return 'mmssl stack: ' + ', '.join(found)


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


@pytest.fixture(autouse=True)
def _restore_tf32():
    """Give every test PyTorch's TF32 flags as it found them: a runner
    turns TF32 on for the process (``env_cfg.tf32``), which would loosen
    the float32 CUDA-equals-CPU comparisons of later tests."""
    import torch

    flags = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )
    yield
    torch.backends.cuda.matmul.allow_tf32 = flags[0]
    torch.backends.cudnn.allow_tf32 = flags[1]


@pytest.fixture(scope='session')
def demo_data_root(tmp_path_factory) -> str:
    """Folder with the demo digits: ``train/<cls>/*.png``, ``val/...``."""
    make_demo_dataset = load_tool(
        'misc/make_demo_dataset.py'
    ).make_demo_dataset

    root = str(tmp_path_factory.mktemp('demo'))
    make_demo_dataset(root)
    return root


@pytest.fixture(scope='session')
def volume_data_root(tmp_path_factory) -> str:
    """A tiny labelled synthetic volume set (``train/<cls>/*``, ``val``)."""
    make_dataset = load_tool('misc/make_volume_dataset.py').make_dataset

    root = str(tmp_path_factory.mktemp('volumes'))
    make_dataset(root, size=32, train_per_class=2, val_per_class=1)
    return root


@pytest.fixture(scope='session')
def multichannel_data_root(tmp_path_factory) -> str:
    """A tiny labelled 5-channel 16-bit TIFF set (``train/<cls>/*.tif``,
    ``val/...``; 2 and 1 images per class)."""
    pytest.importorskip('tifffile')
    make_dataset = load_tool('misc/make_multichannel_dataset.py').make_dataset

    root = str(tmp_path_factory.mktemp('multichannel'))
    make_dataset(root, size=32, train_per_class=2, val_per_class=1)
    return root


@pytest.fixture(scope='session', autouse=True)
def _register_modules():
    from mmssl.setup_env import register_all_modules

    register_all_modules()


@pytest.fixture(scope='session')
def messy_root(tmp_path_factory):
    """A folder of good and broken images (tests.support.messy_files)."""
    from tests.support.messy_files import make_messy_folder

    root = str(tmp_path_factory.mktemp('messy'))
    files = make_messy_folder(root)
    return root, files
