"""Without MONAI / nibabel (and tifffile): mmssl imports, and every 3D
(and multi-channel TIFF) class says which extra to install when it is
built."""

import os.path as osp
import sys

import pytest

from mmssl.extras import require_3d
from tests.support.dist import run

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

SCRIPT = r"""
import sys

class Block:  # an environment without the [3d] and [multichannel] extras
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('monai', 'nibabel', 'tifffile'):
            raise ImportError(f'No module named {name!r} (blocked)')

sys.meta_path.insert(0, Block())
import mmssl, mmssl.datasets, mmssl.models  # noqa: E401
from mmssl.registry import DATASETS, MODELS, TRANSFORMS
from mmssl.setup_env import register_all_modules
register_all_modules()
assert 'monai' not in sys.modules and 'tifffile' not in sys.modules
for registry, cfg in [
    (DATASETS, dict(type='VolumeFolderDataset', data_root='.')),
    (TRANSFORMS, dict(type='LoadVolume')),
    (TRANSFORMS, dict(type='MONAITransform', transform='Spacingd')),
    (TRANSFORMS, dict(type='MultiCrop3D')),
    (MODELS, dict(type='SwinViT3D')),
    (TRANSFORMS, dict(type='LoadMultiChannelTiff')),
]:
    try:
        registry.build(cfg)
    except ImportError as e:
        print('IMPORTERROR', cfg['type'], e)
    else:
        print('BUILT', cfg['type'])
print('FILE', mmssl.__file__)
"""


@pytest.mark.slow
def test_import_without_monai_and_clear_errors():
    # cwd: this checkout's mmssl is the one imported
    proc = run([sys.executable, '-c', SCRIPT], timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [
        ln
        for ln in proc.stdout.splitlines()
        if ln.startswith(('IMPORTERROR', 'BUILT'))
    ]
    assert len(lines) == 6, proc.stdout
    assert f'FILE {osp.join(ROOT, "mmssl", "__init__.py")}' in proc.stdout
    for line in lines:
        assert line.startswith('IMPORTERROR'), line
        extra = 'multichannel' if 'MultiChannelTiff' in line else '3d'
        assert f'pip install -e ".[{extra}]"' in line, line


def test_require_3d_message(monkeypatch):
    # MONAI decides once, when its readers are first imported, whether
    # nibabel exists: import them before hiding nibabel, or every later
    # test in this process reads no NIfTI file.
    import monai.data.image_reader  # noqa: F401

    monkeypatch.setitem(sys.modules, 'nibabel', None)  # import fails
    with pytest.raises(ImportError, match=r'MyThing.*nibabel.*\[3d\]'):
        require_3d('MyThing')


def test_require_3d_old_monai(monkeypatch):
    import monai

    monkeypatch.setattr(monai, '__version__', '1.4.2')
    with pytest.raises(ImportError, match=r'monai>=1\.5, found 1\.4\.2'):
        require_3d('MyThing')
    monkeypatch.setattr(monai, '__version__', '1.5.0')
    assert require_3d('MyThing') is monai
