"""The ``--cfg-options`` arguments of every tool.

Every command-line tool that takes ``--cfg-options`` (tools/train.py,
tools/test.py, tools/eval.py, the analysis and misc tools) declares it
with :func:`add_cfg_options_arguments`: the same parser,
:class:`mmssl.config.values.CfgOptionsAction` (Python literals, lists,
tuples and nested ``dict(...)`` read with ``ast``, nothing evaluated),
and ``--allow-new-keys``. The tools then read their config with the one
loader, :func:`mmssl.config.load_config`, which merges the options with
the same checks (a key the config does not have is an error with a
did-you-mean, unless ``--allow-new-keys``).
"""

import argparse

from .values import CfgOptionsAction

CFG_OPTIONS_HELP = (
    'override config entries, KEY=VALUE (dotted keys, list indices, '
    "Python literals such as [1, 2], (1, 2), dict(a=dict(b=1)) or 'str'); "
    'unknown keys are an error'
)


def add_cfg_options_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--cfg-options`` and ``--allow-new-keys`` to ``parser``.

    Args:
        parser (argparse.ArgumentParser): The tool's parser.
    """
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        metavar='KEY=VALUE',
        help=CFG_OPTIONS_HELP,
    )
    parser.add_argument(
        '--allow-new-keys',
        action='store_true',
        help='let --cfg-options add keys the config does not have',
    )
