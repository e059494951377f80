"""Helpers for the tool tests: import a tool script by path."""

import importlib.util
import os.path as osp

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = osp.join(ROOT, 'tests', 'data', 'configs')


def load_tool(rel_path: str):
    """Import ``tools/<rel_path>`` as a module (tools are not a package)."""
    path = osp.join(ROOT, 'tools', rel_path)
    name = 'tool_' + osp.splitext(osp.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_config(name: str) -> str:
    return osp.join(CONFIGS, name + '.py')
