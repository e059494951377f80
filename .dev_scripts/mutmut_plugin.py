"""pytest plugin that ``.dev_scripts/mutation_test.py`` loads inside mutmut.

The script copies this file to the root of its temporary copy, from where
mutmut copies it into ``mutants/`` (``also_copy``), and adds
``-p mutmut_plugin`` to pytest's arguments. It does two things:

* Imports mmssl's registered modules once, in mutmut's fork server (its
  warm-up runs ``pytest --collect-only`` with the same arguments), and
  freezes the garbage collector there. Without it, every forked mutant
  re-imports mmpretrain's modules in the session fixture of
  ``tests/conftest.py``: about 1.8 s of CPU per mutant instead of 0.2 s.
* Runs the fastest tests first (durations from mutmut's own stats run), so
  that ``-x`` stops a killed mutant early; mutmut passes the tests of a
  mutant in set order.
"""

import gc
import json
import os

STATS = 'mutmut-stats.json'


def pytest_configure(config) -> None:
    try:
        from mmssl.setup_env import register_all_modules
    except ImportError:  # moved: tests still work, only slower
        return
    register_all_modules()
    gc.freeze()


def pytest_collection_modifyitems(session, config, items) -> None:
    if not os.path.exists(STATS):  # the stats run itself
        return
    with open(STATS) as f:
        durations = json.load(f).get('duration_by_test', {})
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
