"""Moved to :mod:`mmssl.models.layers.rope`; this name stays for the
tools and scripts that import it from here."""

from mmssl.models.layers.rope import *  # noqa: F401,F403
from mmssl.models.layers.rope import __all__  # noqa: F401
