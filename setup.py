"""Install mmssl: ``pip install -e .``."""

import os.path as osp

from setuptools import find_packages, setup

HERE = osp.dirname(osp.abspath(__file__))


def get_version() -> str:
    scope: dict = {}
    with open(osp.join(HERE, 'mmssl', 'version.py')) as f:
        exec(compile(f.read(), 'version.py', 'exec'), scope)
    return scope['__version__']


def parse_requirements(name: str) -> list:
    """Read ``requirements/<name>.txt`` into a list of requirement strings."""
    reqs = []
    with open(osp.join(HERE, 'requirements', f'{name}.txt')) as f:
        for line in f:
            line = line.split('#')[0].strip()
            if line and not line.startswith('-'):
                reqs.append(line)
    return reqs


setup(
    name='mmssl',
    version=get_version(),
    description='Self-supervised visual pretraining toolbox (OpenMMLab style)',
    long_description=open(osp.join(HERE, 'README.md')).read(),
    long_description_content_type='text/markdown',
    # the product only: no tests, tools or development scripts
    packages=find_packages(include=['mmssl', 'mmssl.*']),
    include_package_data=True,
    python_requires='>=3.10',
    install_requires=parse_requirements('runtime')
    + parse_requirements('mminstall'),
    extras_require={
        'tests': parse_requirements('tests'),
        'optional': parse_requirements('optional'),
        # warm start from HF transformers .safetensors files
        'safetensors': ['safetensors'],
        '3d': parse_requirements('3d'),
        # 16-bit multi-channel TIFF microscopy (docs/en/multichannel.md)
        'multichannel': parse_requirements('multichannel'),
    },
    license='Apache License 2.0',
    zip_safe=False,
)
