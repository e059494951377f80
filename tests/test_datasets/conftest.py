import os.path as osp
import sys

import pytest

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))


@pytest.fixture(scope='session')
def messy_root(tmp_path_factory):
    from messy_files import make_messy_folder

    root = str(tmp_path_factory.mktemp('messy'))
    files = make_messy_folder(root)
    return root, files
