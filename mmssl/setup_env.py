"""Registering every module mmssl builds from configs."""

import datetime
import warnings

from mmengine import DefaultScope


def register_all_modules(init_default_scope: bool = True) -> None:
    """Import mmssl's and mmpretrain's modules so their registries fill.

    A child registry falls back to its parent for lookup but never imports
    the parent's modules, so mmpretrain's packages are imported here too.

    Args:
        init_default_scope (bool): Set the default scope to ``'mmssl'`` so
            configs resolve mmssl, then mmpretrain, then mmengine classes
            without prefixes. Defaults to True.
    """
    import mmpretrain.datasets  # noqa: F401
    import mmpretrain.engine  # noqa: F401
    import mmpretrain.evaluation  # noqa: F401
    import mmpretrain.models  # noqa: F401
    import mmpretrain.structures  # noqa: F401
    import mmpretrain.visualization  # noqa: F401

    import mmssl.checkpoint  # noqa: F401  (PretrainedStrip)
    import mmssl.datasets  # noqa: F401
    import mmssl.engine  # noqa: F401
    import mmssl.evaluation  # noqa: F401
    import mmssl.models  # noqa: F401
    import mmssl.visualization  # noqa: F401

    if not init_default_scope:
        return
    current = DefaultScope.get_current_instance()
    if current is None:
        DefaultScope.get_instance('mmssl', scope_name='mmssl')
    elif current.scope_name != 'mmssl':
        warnings.warn(
            f'The current default scope "{current.scope_name}" is '
            'not "mmssl"; register_all_modules switches it to '
            '"mmssl". Pass init_default_scope=False to keep it.'
        )
        name = f'mmssl-{datetime.datetime.now()}'
        DefaultScope.get_instance(name, scope_name='mmssl')
