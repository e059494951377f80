"""Import a tool or development script by path (tools/ and .dev_scripts/
are not packages)."""

import contextlib
import importlib.util
import os.path as osp
import sys

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = osp.join(ROOT, 'tests', 'data', 'configs')
# development scripts and their shared code (mmssl_dev), never installed
DEV_SCRIPTS = osp.join(ROOT, '.dev_scripts')


@contextlib.contextmanager
def _script_folder_first(folder: str):
    """``sys.path`` as ``python tools/x.py`` sees it (the script's folder
    first, so a tool finds the modules beside it), for the import only."""
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.path.remove(folder)


def load_tool(rel_path: str, folder: str = osp.join(ROOT, 'tools')):
    """Import ``<folder>/<rel_path>`` (``tools/`` unless told) as a module
    named ``tool_<name>``."""
    path = osp.join(folder, rel_path)
    name = 'tool_' + osp.splitext(osp.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with _script_folder_first(osp.dirname(path)):
        spec.loader.exec_module(module)
    return module


def load_dev_script(name: str):
    """Import ``.dev_scripts/<name>`` as :func:`load_tool` does a tool."""
    return load_tool(name, DEV_SCRIPTS)


def tiny_config(name: str) -> str:
    """A config under tests/data/configs."""
    return osp.join(CONFIGS, name + '.py')
