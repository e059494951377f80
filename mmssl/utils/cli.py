"""Moved to :mod:`mmssl.config.cli`.

Kept only for tools/misc/knn_eval.py, which another branch rewrites;
delete this file once knn_eval imports ``mmssl.config`` (no other
importer is left).
"""

from mmssl.config.cli import add_cfg_options_arguments, load_tool_config

__all__ = ['add_cfg_options_arguments', 'load_tool_config']
