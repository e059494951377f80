"""Moved to :mod:`mmssl.models.layers.drop_path`; this name stays for the
tools and configs that import it from here."""

from mmssl.models.layers.drop_path import *  # noqa: F401,F403
from mmssl.models.layers.drop_path import __all__  # noqa: F401
