"""Hypothesis profiles for the property tests.

``mmssl-ci`` (the default) is derandomised, so every run draws the same
examples and CI is reproducible, and keeps no example database in the
checkout. Set ``HYPOTHESIS_PROFILE=thorough`` to search harder and with
fresh random examples when changing the code under test.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    'mmssl-ci',
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    'thorough',
    max_examples=2000,
    deadline=None,
    derandomize=False,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'mmssl-ci'))
