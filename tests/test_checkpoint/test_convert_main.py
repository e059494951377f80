"""convert_main: the shared command line of the checkpoint converters."""

import pytest
import torch

from mmssl.checkpoint import load_checkpoint
from mmssl.checkpoint.cli import Converted, convert_main, vit_meta


def _double(args, state):
    out = {'y': state['w'] * 2}
    return Converted(dict(state_dict=out), f'doubled -> {args.dst}', out)


def _run(argv, **kwargs):
    return convert_main(
        argv,
        doc='Double a backbone.\n\nMore text.',
        dst_help='output',
        src_prefix_help='prefix in SRC',
        marker='w',
        convert=_double,
        **kwargs,
    )


@pytest.fixture
def src(tmp_path):
    path = tmp_path / 'src.pth'
    state = {
        'teacher.backbone.w': torch.tensor([1.0]),
        'backbone.w': torch.tensor([5.0]),
    }
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), path)
    return str(path)


def test_teacher_by_default_saved_and_returned(src, tmp_path, capsys):
    dst = str(tmp_path / 'out.pth')
    returned = _run([src, dst])
    assert returned['y'].tolist() == [2.0]
    assert f'doubled -> {dst}\n' in capsys.readouterr().out
    saved = load_checkpoint(dst)
    assert list(saved) == ['state_dict']
    assert saved['state_dict']['y'].tolist() == [2.0]


def test_src_prefix_picks_the_student(src, tmp_path):
    dst = str(tmp_path / 'out.pth')
    assert _run([src, dst, '--src-prefix', 'backbone.'])['y'].tolist() == [
        10.0
    ]


def test_options_keep_their_place_around_src_prefix(capsys):
    opts = [('--aa', dict(help='first')), ('--zz', dict(help='last'))]
    with pytest.raises(SystemExit):
        _run(['--help'], options=opts, src_prefix_at=1)
    text = capsys.readouterr().out
    assert text.startswith('usage:') and 'Double a backbone.' in text
    assert 'More text' not in text
    order = [text.index(f) for f in ('--aa', '--src-prefix', '--zz')]
    assert order == sorted(order)
    assert text.index('--zz') < text.index('--trusted')


def test_vit_meta_reads_the_sizes():
    converted = {
        'cls_token': torch.zeros(1, 1, 8),
        'register_tokens': torch.zeros(1, 3, 8),
        'patch_embed.projection.weight': torch.zeros(8, 3, 4, 4),
        'layers.0.ln1.weight': torch.zeros(8),
        'layers.0.ln2.weight': torch.zeros(8),
        'layers.1.ln1.weight': torch.zeros(8),
    }
    assert vit_meta(converted) == dict(
        embed_dims=8, num_layers=2, num_register_tokens=3, patch_size=4
    )
    del converted['register_tokens']
    assert vit_meta(converted)['num_register_tokens'] == 0
