"""The segmentation probe: folder layouts, bad input, a probe that must
learn a linearly separable fixture, sliding windows."""

import numpy as np
import pytest
import torch

from mmssl.evaluation.dense_data import read_mask, seg_pairs
from mmssl.evaluation.dense_probe import (
    Featurizer,
    LinearHead,
    ProbeSettings,
    slide_logits,
    sweep_lr,
    windows,
)
from mmssl.evaluation.seg_probe import run_seg_probe, seg_loss, seg_score
from mmssl.evaluation.tasks.evaluate import PatchPixels
from tests.support.dense_fixtures import write_ade


def _featurizer():
    mean = np.zeros(3, np.float32)
    return Featurizer(PatchPixels(4), mean, mean + 255, False)


def test_probe_learns_a_separable_fixture(tmp_path):
    root = write_ade(tmp_path)
    settings = ProbeSettings(crop=16, iters=150, lr=0.05, batch_size=4)
    out = run_seg_probe(
        _featurizer(),
        seg_pairs(root, 'train'),
        seg_pairs(root, 'val'),
        num_classes=2,
        reduce_zero_label=True,
        settings=settings,
    )
    assert out['metrics']['mIoU'] == pytest.approx(100.0)
    assert out['losses'][-1] < out['losses'][0] / 5
    image, label, pred = out['samples'][0]
    assert label[0, 0] == 255  # 0 = unlabeled -> ignored
    assert pred.shape == label.shape == image.shape[:2]


def test_sliding_windows_cover_a_wide_image():
    assert windows(16, 16, 10) == [0]
    assert windows(40, 16, 10) == [0, 10, 20, 24]
    # a 16 x 40 image, crop 16: class = colour, read window by window
    img = np.zeros((16, 40, 3), np.uint8)
    img[:, 20:] = 255
    head = LinearHead(48, 2).eval()
    seen = []

    def fake_head(maps, cls):
        seen.append(maps.shape)
        white = maps.mean(1, keepdim=True)  # (1, 1, h, w)
        return torch.cat([1 - white, white], 1)

    logits = slide_logits(_featurizer(), fake_head, img, 16, (32, 80))
    assert logits.shape == (2, 32, 80)  # resized to the label's size
    assert len(seen) == 4 and all(s == (1, 48, 4, 4) for s in seen)
    pred = logits.argmax(0)
    assert (pred[:, :36] == 0).all() and (pred[:, 44:] == 1).all()
    assert head is not None


def test_layouts_and_bad_input_name_the_file(tmp_path):
    root = write_ade(tmp_path / 'ade')
    empty = r'val split is empty: no image in .*images/validation'
    with pytest.raises(FileNotFoundError, match=empty):
        seg_pairs(str(tmp_path), 'val')
    with pytest.raises(FileNotFoundError, match='the val split is empty'):
        seg_pairs(str(tmp_path), 'val', 'cityscapes')
    mask_path = tmp_path / 'ade' / 'annotations' / 'training' / '0.png'
    with pytest.raises(
        ValueError, match=r'0.png is 16x16 but its image is 20x16'
    ):
        read_mask(str(mask_path), (16, 20, 3), 2, True)
    with pytest.raises(
        ValueError, match='class id 1 after reduce.*--num-classes 2'
    ):
        read_mask(str(mask_path), (16, 16, 3), 1, True)
    mask = read_mask(str(mask_path), (16, 16, 3), 2, True)
    assert set(np.unique(mask)) <= {0, 1, 255}
    raw = read_mask(str(mask_path), (16, 16, 3), 3, False)
    assert (raw[mask != 255] == mask[mask != 255] + 1).all()
    (tmp_path / 'ade' / 'images' / 'training' / 'x.jpg').write_bytes(b'')
    with pytest.raises(FileNotFoundError, match='x.jpg has no label file'):
        seg_pairs(root, 'train')


def test_voc_and_cityscapes_layouts(tmp_path):
    voc = tmp_path / 'voc'
    for sub in ('JPEGImages', 'SegmentationClass', 'ImageSets/Segmentation'):
        (voc / sub).mkdir(parents=True)
    (voc / 'ImageSets/Segmentation/val.txt').write_text('a\n')
    (voc / 'JPEGImages/a.jpg').write_bytes(b'x')
    (voc / 'SegmentationClass/a.png').write_bytes(b'x')
    assert seg_pairs(str(voc), 'val', 'voc') == [
        (str(voc / 'JPEGImages/a.jpg'), str(voc / 'SegmentationClass/a.png'))
    ]
    city = tmp_path / 'city'
    img = city / 'leftImg8bit/train/bonn/b_1_leftImg8bit.png'
    lab = city / 'gtFine/train/bonn/b_1_gtFine_labelTrainIds.png'
    for p in (img, lab):
        p.parent.mkdir(parents=True)
        p.write_bytes(b'x')
    assert seg_pairs(str(city), 'train', 'cityscapes') == [
        (str(img), str(lab))
    ]


class _NoneTrain(PatchPixels):
    """mmpretrain's BaseBackbone.train() returns None (MAE's ViT...)."""

    def train(self, mode=True):
        super().train(mode)


def test_featurizer_keeps_a_backbone_whose_train_returns_none():
    mean = np.zeros(3, np.float32)
    featurizer = Featurizer(_NoneTrain(4), mean, mean + 255, False)
    assert not featurizer.backbone.training
    maps, cls = featurizer([np.zeros((8, 8, 3), np.uint8)])
    assert maps.shape == (1, 48, 2, 2) and cls is None


class _MasksByDefault(PatchPixels):
    """MAE's ViT masks unless called with ``mask=None``."""

    def forward(self, x, mask=True):
        if mask is not None:
            raise AssertionError('called with masking on')
        return super().forward(x)


def test_dense_features_turn_off_a_backbones_default_masking():
    from mmssl.evaluation.dense_features import dense_features

    maps, _ = dense_features(_MasksByDefault(4), torch.zeros(1, 3, 8, 8))
    assert maps.shape == (1, 48, 2, 2)


def _separable(n=10, size=8):
    """Features (n, 2, 2, 2) whose channel 0 gives the class of each
    patch, labels (n, size, size) at 4 px per patch."""
    gen = torch.Generator().manual_seed(0)
    cls = torch.randint(0, 2, (n, 2, 2), generator=gen)
    maps = torch.stack([cls * 2.0 - 1, torch.randn(n, 2, 2, generator=gen)])
    labels = cls.repeat_interleave(size // 2, 1).repeat_interleave(
        size // 2, 2
    )
    return maps.permute(1, 0, 2, 3).contiguous(), labels


def test_sweep_chooses_the_best_held_out_lr_and_holds_out_a_fifth():
    maps, labels = _separable()
    seen = []

    def score(head, x, y):
        seen.append(x.shape[0])
        return seg_score(2)(head, x, y)

    settings = ProbeSettings(iters=40, batch_size=4, lrs=(1e-7, 0.1))
    lr, scores = sweep_lr(
        lambda: LinearHead(2, 2), maps, labels, seg_loss, score, settings
    )
    assert seen == [2, 2]  # ceil(0.2 * 10) held-out crops, for each lr
    assert set(scores) == {1e-7, 0.1}
    # lr 0.1 learns the sign of channel 0 (errors only where the bilinear
    # upsampling blurs a class border); lr 1e-7 keeps the random init
    assert scores[0.1] > 95.0
    assert scores[1e-7] < 80.0
    assert lr == 0.1


def test_sweep_skips_a_diverged_lr_and_refuses_too_few_images():
    maps, labels = _separable()
    values = iter([float('nan'), 10.0])
    settings = ProbeSettings(iters=2, batch_size=4, lrs=(1.0, 1e-3))
    lr, scores = sweep_lr(
        lambda: LinearHead(2, 2),
        maps,
        labels,
        seg_loss,
        lambda *a: next(values),
        settings,
    )
    assert lr == 1e-3 and np.isnan(scores[1.0])
    # one lr: no sweep, no held-out part
    assert sweep_lr(None, maps, labels, seg_loss, None, ProbeSettings()) == (
        1e-3,
        {},
    )
    with pytest.raises(ValueError, match='one learning rate'):
        sweep_lr(None, maps[:1], labels[:1], seg_loss, None, settings)


@pytest.mark.parametrize('vit_type', ['MAEViT', 'MFFViT', 'MILANViT'])
def test_dense_features_of_mae_style_vits_cover_every_patch(vit_type):
    """MFF's ViT masks even when told ``mask=None`` and MILAN's takes
    ``importance``: the probe still gets every patch, unmasked, as the
    plain ViT forward gives it."""
    from mmpretrain.models.backbones import VisionTransformer

    from mmssl.evaluation.dense_features import dense_features
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    torch.manual_seed(0)
    arch = dict(
        embed_dims=16, num_layers=2, num_heads=2, feedforward_channels=32
    )
    vit = MODELS.build(
        dict(
            type=vit_type,
            arch=arch,
            img_size=16,
            patch_size=4,
            out_type='raw',
            out_indices=[-1],
        )
    )
    vit.eval()
    x = torch.randn(2, 3, 16, 16)
    maps, cls = dense_features(vit, x)
    assert maps.shape == (2, 16, 4, 4) and cls.shape == (2, 16)
    tokens = VisionTransformer.forward(vit, x)[0]  # (B, 1 + 16, C)
    torch.testing.assert_close(cls, tokens[:, 0])
    torch.testing.assert_close(
        maps, tokens[:, 1:].transpose(1, 2).reshape(2, 16, 4, 4)
    )


def test_dense_features_of_mixmim_are_its_last_stage_before_the_pool():
    """MixMIM's forward pools its tokens into one vector; the probe gets
    the last stage's map, whose mean is that vector."""
    from mmssl.evaluation.dense_features import dense_features
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    torch.manual_seed(0)
    backbone = MODELS.build(
        dict(
            type='MixMIMPretrainTransformer',
            arch=dict(
                embed_dims=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1]
            ),
            img_size=64,
            patch_size=4,
            window_size=[4, 4, 2, 1],
        )
    )
    backbone.eval()
    x = torch.randn(2, 3, 64, 64)
    maps, cls = dense_features(backbone, x)
    assert maps.shape == (2, 64, 2, 2) and cls is None  # stride 32
    pooled = backbone(x, mask=None)[0]  # (B, C)
    torch.testing.assert_close(maps.mean((2, 3)), pooled)
