from .relative_loc import RelativeLocPatches  # noqa: F401
