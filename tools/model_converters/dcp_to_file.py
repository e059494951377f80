"""Turn a sharded (DCP) checkpoint folder into one ordinary checkpoint.

    python tools/model_converters/dcp_to_file.py DCP_DIR OUT.pth

OUT.pth holds plain tensors, numbers and strings (``state_dict``,
``optimizer``, ...) and loads with mmssl's safe loader, e.g. as
``load_from`` or into publish_model.py. Needs no process group.
"""

import argparse
import os.path as _osp
import sys


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('dcp_dir', help='sharded checkpoint folder')
    parser.add_argument('out_file', help='single-file checkpoint to write')
    args = parser.parse_args(argv)
    if not _osp.isfile(_osp.join(args.dcp_dir, '.metadata')):
        sys.exit(
            f'{args.dcp_dir} is not a complete DCP checkpoint (no .metadata).'
        )
    from mmssl.checkpoint import dcp_to_file

    dcp_to_file(args.dcp_dir, args.out_file)
    print(f'wrote {args.out_file}')


if __name__ == '__main__':
    main()
