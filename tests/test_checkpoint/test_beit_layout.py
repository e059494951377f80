"""BEiT's shared relative-position table reaches the fine-tune backbone."""

import pytest
import torch
from torch import nn

from mmssl.checkpoint import load_pretrained
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

ARCH = dict(embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64)
TABLE = 'rel_pos_bias.relative_position_bias_table'


def _beit(shared: bool):
    register_all_modules()
    return MODELS.build(
        dict(
            type='mmpretrain.BEiTPretrainViT' if shared else 'BEiTViT',
            _scope_='mmpretrain',
            arch=ARCH,
            img_size=32,
            patch_size=8,
            use_shared_rel_pos_bias=shared,
            use_rel_pos_bias=not shared,
            layer_scale_init_value=0.1,
        )
    )


@pytest.mark.parametrize('parent', [False, True])
def test_shared_table_goes_into_every_block(parent):
    pretrained = _beit(shared=True)
    with torch.no_grad():
        pretrained.get_parameter(TABLE).normal_()
    state = {'backbone.' + k: v for k, v in pretrained.state_dict().items()}
    backbone = _beit(shared=False)
    # the whole classifier (keys behind backbone.) or the bare backbone
    model = nn.ModuleDict(dict(backbone=backbone)) if parent else backbone
    report = load_pretrained(model, state, logger='silent')
    where = 'backbone.' if parent else ''
    for i in range(ARCH['num_layers']):
        attn = backbone.layers[i].attn
        assert torch.equal(
            attn.relative_position_bias_table, pretrained.get_parameter(TABLE)
        )
        assert f'{where}layers.{i}.attn.relative_position_bias_table' in (
            report.matched
        )
        assert torch.equal(
            attn.relative_position_index,
            pretrained.rel_pos_bias.relative_position_index,
        )
    assert not [k for k in report.missing if 'relative_position' in k]
    assert not [k for k in report.unexpected if 'rel_pos_bias' in k]


def test_beit_exports_to_mmsegs_beit(tmp_path, capsys):
    """The mmseg export of a BEiT checkpoint (a raw KeyError before): the
    keys of mmseg's BEiT, the shared table in every block, its options."""
    from mmssl.checkpoint.layouts.beit import mmseg_beit_keys
    from tests.support.tools import load_tool

    pretrained = _beit(shared=True)
    with torch.no_grad():
        pretrained.get_parameter(TABLE).normal_()
    state = {'backbone.' + k: v for k, v in pretrained.state_dict().items()}
    state['target_generator.x'] = torch.zeros(1)  # the tokenizer: not taken
    src, dst = str(tmp_path / 'beit.pth'), str(tmp_path / 'mmseg.pth')
    torch.save(dict(state_dict=state), src)
    tool = load_tool('model_converters/mmssl_to_mmseg.py')
    saved = tool.main([src, dst])
    out = saved['state_dict']
    assert sorted(out) == sorted(mmseg_beit_keys(2, final_norm=True))
    for i in range(2):
        assert torch.equal(
            out[f'layers.{i}.attn.relative_position_bias_table'],
            pretrained.get_parameter(TABLE),
        )
    assert torch.equal(out['layers.1.gamma_2'], pretrained.layers[1].gamma_2)
    assert saved['meta']['img_size'] == 32
    assert saved['meta']['num_heads'] == 2
    assert "mmseg's BEiT" in capsys.readouterr().out
