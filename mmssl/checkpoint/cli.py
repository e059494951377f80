"""The checkpoint tools' command line: ``--trusted``, the refusal, and
:func:`convert_main`, the whole CLI of a converter.

Every tool that reads a checkpoint adds the flag with
:func:`add_trusted_argument`, passes :func:`trust_from_args` to the loader
and runs the load inside :func:`exit_on_untrusted`, so a refused file ends
the tool with one line that names the opt-in instead of a traceback.
The converters in tools/model_converters/ go through :func:`convert_main`
(parse, safe load, select the backbone, convert, atomic save).
"""

import argparse
import contextlib
import sys
from typing import (
    Callable,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .io import load_checkpoint, save_checkpoint_atomic
from .policy import TRUST_ENV, UnsafeCheckpointError
from .state_dict import (
    describe_network,
    find_backbone_prefix,
    select_backbone,
    unwrap_state_dict,
)

TRUSTED_FLAG = '--trusted'


def add_trusted_argument(
    parser: argparse.ArgumentParser, what: str = 'the checkpoint'
) -> None:
    """Add ``--trusted`` to a tool's parser."""
    parser.add_argument(
        TRUSTED_FLAG,
        action='store_true',
        help=f'fully unpickle {what}, which can run code stored in it: '
        f'only for files you trust (same as {TRUST_ENV}=1). Without it, '
        'only tensors and the types mmengine checkpoints hold are loaded',
    )


def trust_from_args(args: argparse.Namespace) -> Optional[bool]:
    """``True`` with ``--trusted``, else None (follow ``TRUST_ENV``)."""
    return True if getattr(args, 'trusted', False) else None


def refusal_message(err: UnsafeCheckpointError, flag: str = TRUSTED_FLAG):
    """The one-line refusal a tool prints, naming its opt-in."""
    source = err.source or 'the checkpoint'
    what = err.refused or 'a type outside the allowlist'
    return (
        f'error: refusing to load {source}: it pickles {what}, and '
        'unpickling that could run arbitrary code. If you trust this file, '
        f'rerun with {flag} (or set {TRUST_ENV}=1).'
    )


@contextlib.contextmanager
def exit_on_untrusted(flag: str = TRUSTED_FLAG) -> Iterator[None]:
    """Turn :class:`UnsafeCheckpointError` into a message and exit code 2.

    Raises:
        SystemExit: With status 2 when a load inside was refused.
    """
    try:
        yield
    except UnsafeCheckpointError as err:
        print(refusal_message(err, flag), file=sys.stderr)
        raise SystemExit(2) from None


class Converted(NamedTuple):
    """What a converter's ``convert`` step gives :func:`convert_main`.

    Attributes:
        saved (dict): The object written to DST.
        message (str): The line printed after the save.
        returned (dict, optional): What ``main`` returns (the tests'
            handle); ``saved`` when None.
    """

    saved: dict
    message: str
    returned: Optional[dict] = None


#: ``--prefix`` and ``--no-strict`` of the converters into mmssl's layout.
PREFIX_OPTION = (
    '--prefix',
    dict(
        action='append',
        default=None,
        help='prefix of the backbone keys in the output; repeat it to write '
        "several copies (default: 'backbone.'; use '' for a bare backbone)",
    ),
)
NO_STRICT_OPTION = (
    '--no-strict',
    dict(
        action='store_true', help='drop unrecognised keys instead of failing'
    ),
)


def read_state_dict(args: argparse.Namespace) -> dict:
    """SRC through the safe loader (``--trusted`` honoured), unwrapped."""
    with exit_on_untrusted():
        ckpt = load_checkpoint(args.src, trusted=trust_from_args(args))
    return unwrap_state_dict(ckpt)


def vit_meta(converted: dict) -> dict:
    """Sizes of a converted mmssl ViT backbone, for a checkpoint's meta."""
    regs = converted.get('register_tokens')
    return dict(
        embed_dims=int(converted['cls_token'].shape[-1]),
        num_layers=len(
            {k.split('.')[1] for k in converted if k.startswith('layers')}
        ),
        num_register_tokens=0 if regs is None else int(regs.shape[1]),
        patch_size=int(converted['patch_embed.projection.weight'].shape[-1]),
    )


def convert_main(
    argv: Optional[List[str]],
    *,
    doc: str,
    dst_help: str,
    src_prefix_help: str,
    marker: Union[str, Callable[[argparse.Namespace, dict], str]],
    convert: Callable[[argparse.Namespace, dict], Converted],
    options: Sequence[Tuple[str, dict]] = (),
    src_prefix_at: int = 0,
    read: Callable[[argparse.Namespace], dict] = read_state_dict,
    src_help: str = 'mmssl checkpoint (.pth)',
) -> dict:
    """The command line of a checkpoint converter, SRC to DST.

    Parses ``src dst [options] --src-prefix --trusted``, reads SRC with
    ``read`` (the safe loader by default), keeps the backbone found by
    ``marker`` (or under ``--src-prefix``), calls ``convert`` and saves
    its result atomically to DST, then prints its message.

    Args:
        argv (list[str], optional): The arguments; ``sys.argv[1:]`` if None.
        doc (str): The tool's module docstring; its first line is the
            description.
        dst_help (str): Help of the DST argument.
        src_prefix_help (str): Help of ``--src-prefix``.
        marker (str | callable): Key suffix that names the backbone in SRC,
            or ``f(args, state) -> suffix`` (it may set fields of ``args``
            that ``convert`` reads).
        convert (callable): ``f(args, backbone_state) -> Converted``.
        options (sequence): Further options as ``(flag, add_argument
            kwargs)`` pairs, in their help order.
        src_prefix_at (int): Position of ``--src-prefix`` among ``options``.
        read (callable): ``f(args) -> state dict`` of SRC.
        src_help (str): Help of the SRC argument.

    Returns:
        dict: ``Converted.returned`` (``Converted.saved`` when None).
    """
    parser = argparse.ArgumentParser(description=doc.split('\n')[0])
    parser.add_argument('src', help=src_help)
    parser.add_argument('dst', help=dst_help)
    src_prefix = ('--src-prefix', dict(default=None, help=src_prefix_help))
    options = list(options)
    options.insert(src_prefix_at, src_prefix)
    for flag, kwargs in options:
        parser.add_argument(flag, **kwargs)
    parser.add_argument(
        '--network',
        choices=('teacher', 'online', 'momentum'),
        help='network of SRC to export; default: the teacher (DINO '
        'family), else the online network (BYOL, MoCo)',
    )
    add_trusted_argument(parser, 'SRC')
    args = parser.parse_args(argv)
    state = read(args)
    suffix = marker(args, state) if callable(marker) else marker
    prefix = args.src_prefix
    if prefix is None:
        prefix = find_backbone_prefix(state, suffix, network=args.network)
    words = describe_network(prefix, state)
    state = select_backbone(state, prefix, marker=suffix)
    result = convert(args, state)
    save_checkpoint_atomic(result.saved, args.dst)
    print(f'Exported the {words}.')
    print(result.message)
    return result.saved if result.returned is None else result.returned
