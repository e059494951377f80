"""User errors: a config, option or file that cannot give a run.

Command-line tools catch :class:`UserError` at the top level and print its
message as one line (``error: ...``, exit status :attr:`exit_code`),
without a traceback unless ``--debug`` is given.
"""

import difflib
import glob
import os.path as osp
from typing import List, Optional


class UserError(Exception):
    """A mistake the user can fix; the message says what and how.

    Attributes:
        exit_code (int): Status for a command-line tool: 2 for a wrong
            config, option or file, 1 when the run cannot start now (busy
            work dir, too few samples).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def __str__(self) -> str:
        return str(self.args[0])


class TrainConfigError(UserError, ValueError):
    """The config or the options cannot give a run; the message says why."""


def nearest_config_names(
    path: str, configs_dir: Optional[str] = None, n: int = 3
) -> List[str]:
    """Config files under ``configs/`` whose names are closest to ``path``.

    Args:
        path (str): The config path that does not exist.
        configs_dir (str, optional): Folder searched recursively; default:
            ``configs/`` of the current folder, else of this checkout.
        n (int): At most this many names.

    Returns:
        list[str]: Paths (as ``configs/...``), nearest first.
    """
    if configs_dir is None:
        here = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
        candidates = ('configs', osp.join(here, 'configs'))
        configs_dir = next((d for d in candidates if osp.isdir(d)), None)
    if configs_dir is None:
        return []
    files = glob.glob(osp.join(configs_dir, '**', '*.py'), recursive=True)
    by_name = {}
    for f in files:
        if '_base_' not in f.split(osp.sep):
            by_name.setdefault(osp.basename(f), f)
    names = difflib.get_close_matches(
        osp.basename(path), list(by_name), n=n, cutoff=0.6
    )
    root = osp.dirname(osp.abspath(configs_dir))
    return [osp.relpath(by_name[name], root) for name in names]


def missing_config_error(path: str) -> TrainConfigError:
    """The error for a config path that is not a file, with the nearest
    names under ``configs/``."""
    near = nearest_config_names(path)
    hint = f'; did you mean {" or ".join(near)}?' if near else '.'
    return TrainConfigError(f'config file {path} does not exist{hint}')
