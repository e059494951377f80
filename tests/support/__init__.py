"""Helpers the tests share (not tests themselves).

Import them by package path, e.g. ``from tests.support.dist import spawn``:

- ``dist``: spawn gloo ranks, reserved ports, subprocesses that die with
  the test (was ``tests/_dist.py``)
- ``slurm``: a one-node test SLURM cluster (was ``tests/_slurm.py``)
- ``learns``: demo learns-tests: one thread, ``StopAfter``, ``demo_cfg``
  (was ``tests/_learns.py``)
- ``dinov3_ref``: an independent DINOv3 hub forward and state dict (was
  ``tests/_dinov3_ref.py``)
- ``messy_files``, ``volumes``: folders of bad images and volumes (were
  in ``tests/test_datasets/``)
- ``procs``, ``resume``: training subprocesses and exact-resume helpers
  (were ``_procs.py`` and ``resume_utils.py`` in
  ``tests/test_engine/test_runner/``)
- ``tools``: ``load_tool`` imports a script under ``tools/`` by path (was
  ``tests/test_tools/_utils.py``)
"""
