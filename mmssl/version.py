"""Version of mmssl."""

__version__ = '0.1.0'


def parse_version_info(version_str: str) -> tuple:
    """Parse a version string such as ``'0.1.0'`` into a tuple of ints.

    Args:
        version_str (str): The version string.

    Returns:
        tuple: e.g. ``(0, 1, 0)``; a suffix such as ``rc1`` is kept as a str.
    """
    info = []
    for part in version_str.split('.'):
        if part.isdigit():
            info.append(int(part))
        else:
            info.append(part)
    return tuple(info)


version_info = parse_version_info(__version__)
