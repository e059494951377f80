"""Free TCP ports for the rendezvous of a distributed job.

Standard library only: the shell scripts print a free port with
``python -m mmssl.launch.ports`` without importing torch.
"""

import socket


def find_free_port(host: str = '') -> int:
    """Ask the operating system for a TCP port nobody listens on.

    Binding to port 0 makes the kernel pick an unused port; the socket is
    closed at once, so the port is free for the launcher that follows (a
    race with another program grabbing the very same port in between is
    possible but very unlikely, since the kernel hands ports out in turn).

    Args:
        host (str): Interface to bind, ``''`` for all. Defaults to ``''``.

    Returns:
        int: A port number in the ephemeral range.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        return sock.getsockname()[1]


def is_port_free(port: int, host: str = '') -> bool:
    """Whether ``port`` can be bound on ``host`` right now.

    Args:
        port (int): TCP port number.
        host (str): Interface to bind, ``''`` for all. Defaults to ``''``.

    Returns:
        bool: True if binding succeeded.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


if __name__ == '__main__':
    print(find_free_port())
