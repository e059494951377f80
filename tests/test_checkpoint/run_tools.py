"""Run tool scripts as ``__main__``, one after another, in this process.

    python run_tools.py CASES.json RESULTS.json

Each case is ``{name, script, argv, env, marker}``: the script runs with
``runpy.run_path(script, run_name='__main__')`` and ``sys.argv = [script,
*argv]``, exactly as ``python script argv...`` would run it, so one
interpreter start (torch, mmengine, mmssl imports) serves every tool.

Before the first case, mmengine's loader for local paths is replaced by one
that unpickles fully (``weights_only=False``): what stops a payload is then
the tool's own loading policy, not torch's default or mmssl's import-time
patching of mmengine. The caller puts the checkout on ``PYTHONPATH``
(for ``mmssl`` and ``tests.test_checkpoint.payload``).
"""

import contextlib
import io
import json
import os
import os.path as osp
import runpy
import sys
import time
import traceback


def _run(case: dict) -> dict:
    from mmssl.checkpoint import set_checkpoint_trust

    # A separate process per tool would start untrusted: so does each case
    # (a trusted run sets process-wide trust through its config).
    set_checkpoint_trust(False)
    old_env = {k: os.environ.get(k) for k in case.get('env', {})}
    os.environ.update(case.get('env', {}))
    old_argv = sys.argv
    sys.argv = [case['script'], *case['argv']]
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(case['script'], run_name='__main__')
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(bool(exc.code))
    except BaseException:  # noqa: BLE001 - reported to the test
        code = 1
        err.write(traceback.format_exc())
    finally:
        sys.argv = old_argv
        for key, value in old_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return dict(
        rc=code,
        stdout=out.getvalue()[-3000:],
        stderr=err.getvalue()[-3000:],
        marker=osp.exists(case['marker']),
        seconds=round(time.perf_counter() - start, 2),
    )


def main(cases_file: str, results_file: str) -> None:
    import mmssl.setup_env  # noqa: F401  (as the tools import it first)
    from tests.test_checkpoint.payload import register_unsafe_scheme

    register_unsafe_scheme('')
    with open(cases_file) as f:
        cases = json.load(f)
    results = {case['name']: _run(case) for case in cases}
    with open(results_file, 'w') as f:
        json.dump(results, f, indent=1)


if __name__ == '__main__':
    main(*sys.argv[1:3])
