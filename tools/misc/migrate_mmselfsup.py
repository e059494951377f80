"""Convert MMSelfSup 1.x configs into mmssl configs.

    python tools/misc/migrate_mmselfsup.py SRC -o DST

SRC is an MMSelfSup config file or a folder of them (``_base_`` folders
are read as bases); DST a file or a folder. Each output is one flat config
(its ``_base_`` files merged in) that mmssl's tools/train.py runs. It
prints every change and every setting it could not map, with the reason.
See docs/en/migrate_mmselfsup.md.
"""

import argparse
import sys

from mmssl.config.migrate_mmselfsup import migrate_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='MMSelfSup config file or folder')
    parser.add_argument(
        '-o', '--out', required=True, help='output file or folder'
    )
    parser.add_argument(
        '--quiet',
        action='store_true',
        help='print one line per config and what could not be mapped',
    )
    args = parser.parse_args(argv)
    try:
        reports = migrate_path(args.src, args.out)
    except FileNotFoundError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    failed = 0
    for report in reports:
        lines = report.lines()
        if args.quiet:
            lines = [ln for ln in lines if 'changed  ' not in ln]
        print('\n'.join(lines))
        failed += any(w == 'file' for w, _ in report.unmapped)
    print(
        f'{len(reports) - failed} of {len(reports)} configs migrated '
        f'to {args.out}'
    )
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
