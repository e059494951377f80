"""Relative Location, Rotation Prediction, NPID, DeepCluster and ODC:
losses against values computed independently in the test."""

import math

import pytest
import torch
import torch.nn.functional as F
from mmpretrain.structures import DataSample

from mmssl.models.algorithms.rotation_pred import rotate_batch
from mmssl.registry import MODELS

BACKBONE = dict(
    type='ResNet_CIFAR', depth=18, stem_channels=4, base_channels=4
)  # 32-channel output


def samples(idx):
    return [DataSample(metainfo=dict(sample_idx=i)) for i in idx]


def manual_ce(logits, labels, class_weight=None):
    """Cross-entropy written out: -log softmax, weighted mean."""
    logp = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    nll = -logp[torch.arange(len(labels)), labels]
    if class_weight is None:
        return nll.mean()
    w = class_weight[labels]
    return (w * nll).sum() / w.sum()


def test_pretext_cls_head_matches_manual_cross_entropy():
    head = MODELS.build(
        dict(
            type='PretextClsHead',
            in_channels=3,
            num_classes=2,
            with_avg_pool=True,
        )
    )
    with torch.no_grad():
        head.fc.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]))
        head.fc.bias.zero_()
    feats = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])[..., None, None]
    feats = feats.expand(2, 3, 2, 2)  # pooled back to the rows above
    labels = torch.tensor([0, 0])
    # logits [1, 0] and [0, 2]
    expected = (
        -math.log(math.e / (math.e + 1)) - math.log(1 / (1 + math.e**2))
    ) / 2
    assert float(head.loss(feats, labels).detach()) == pytest.approx(
        expected, rel=1e-5
    )
    weight = torch.tensor([3.0, 1.0])
    labels = torch.tensor([0, 1])
    expected_w = (
        3 * -math.log(math.e / (math.e + 1))
        + -math.log(math.e**2 / (1 + math.e**2))
    ) / 4
    assert float(head.loss(feats, labels, weight).detach()) == pytest.approx(
        expected_w, rel=1e-5
    )
    head.reset_parameters()
    assert float(head.fc.bias.abs().sum()) == 0


def test_rotate_batch_values():
    img = torch.arange(4.0).view(1, 1, 2, 2)  # [[0, 1], [2, 3]]
    rotated, labels = rotate_batch(img.repeat(2, 1, 1, 1))
    assert labels.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    # counter-clockwise 90 degrees: [[1, 3], [0, 2]]
    assert rotated[2, 0].tolist() == [[1.0, 3.0], [0.0, 2.0]]
    assert rotated[4, 0].tolist() == [[3.0, 2.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match='square'):
        rotate_batch(torch.zeros(1, 1, 2, 3))


def test_rotation_pred_loss():
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='RotationPred',
            backbone=BACKBONE,
            head=dict(
                type='PretextClsHead',
                in_channels=32,
                num_classes=4,
                with_avg_pool=True,
            ),
        )
    ).eval()
    img = torch.randn(2, 3, 16, 16)
    loss = model.loss([img], samples([0, 1]))['loss']
    imgs = torch.cat([img.rot90(k, (2, 3)) for k in range(4)])
    logits = model.head.fc(model.backbone(imgs)[-1].mean(dim=(2, 3)))
    expected = manual_ce(logits, torch.tensor([0, 0, 1, 1, 2, 2, 3, 3]))
    assert torch.allclose(loss, expected, atol=1e-6)


def test_relative_loc_loss_pairs_centre_with_neighbours():
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='RelativeLoc',
            backbone=BACKBONE,
            neck=dict(
                type='RelativeLocNeck',
                in_channels=32,
                out_channels=8,
                dropout=0.0,
            ),
            head=dict(type='PretextClsHead', in_channels=8, num_classes=8),
        )
    ).eval()
    patches = [torch.randn(2, 3, 8, 8) for _ in range(9)]
    loss = model.loss(patches, samples([0, 1]))['loss']
    pooled = [model.backbone(p)[-1].mean(dim=(2, 3)) for p in patches]
    pair_feats, labels = [], []
    for pos, i in enumerate([0, 1, 2, 3, 5, 6, 7, 8]):
        pair_feats.append(torch.cat([pooled[4], pooled[i]], dim=1))
        labels += [pos, pos]
    x = model.neck.fc(torch.cat(pair_feats))
    x = F.relu(model.neck.bn(x))
    expected = manual_ce(model.head.fc(x), torch.tensor(labels))
    assert torch.allclose(loss, expected, atol=1e-5)
    with pytest.raises(ValueError, match='9 patches'):
        model.loss(patches[:4], samples([0, 1]))


def _npid(num_samples=6, neg_num=3):
    return MODELS.build(
        dict(
            type='NPID',
            num_samples=num_samples,
            feat_dim=4,
            neg_num=neg_num,
            bank_momentum=0.5,
            backbone=BACKBONE,
            neck=dict(
                type='MoCoV2Neck',
                in_channels=32,
                hid_channels=8,
                out_channels=4,
                with_avg_pool=True,
            ),
            head=dict(
                type='ContrastiveHead',
                loss=dict(type='CrossEntropyLoss'),
                temperature=0.07,
            ),
        )
    )


def test_npid_loss_and_memory_update():
    torch.manual_seed(0)
    model = _npid().eval()
    img = torch.randn(2, 3, 16, 16)
    idx = torch.tensor([4, 1])
    bank = model.memory_bank.clone()
    torch.manual_seed(1)
    loss = model.loss([img], samples(idx.tolist()))['loss']
    torch.manual_seed(1)
    neg_idx = torch.randint(6, (2 * 3,)).view(2, 3)
    with torch.no_grad():
        f = F.normalize(model.neck(model.backbone(img))[0], dim=1)
    expected = 0.0
    for b in range(2):
        pos = torch.exp(f[b] @ bank[idx[b]] / 0.07)
        neg = torch.exp(bank[neg_idx[b]] @ f[b] / 0.07).sum()
        expected += -torch.log(pos / (pos + neg)) / 2
    assert float(loss) == pytest.approx(float(expected), rel=1e-4)
    new_rows = F.normalize(0.5 * bank[idx] + 0.5 * f, dim=1)
    assert torch.allclose(model.memory_bank[idx], new_rows, atol=1e-6)
    untouched = [0, 2, 3, 5]
    assert torch.equal(model.memory_bank[untouched], bank[untouched])
    assert 'memory_bank' in model.state_dict()  # survives resume
    with pytest.raises(ValueError, match='num_samples'):
        model.loss([img], samples([0, 6]))


def test_deepcluster_uses_pseudo_labels_and_resets_head():
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='DeepCluster',
            num_samples=5,
            num_classes=3,
            backbone=BACKBONE,
            neck=dict(type='GlobalAveragePooling'),
            head=dict(type='PretextClsHead', in_channels=32, num_classes=3),
        )
    ).eval()
    with torch.no_grad():
        model.head.fc.weight.fill_(1.0)
    model.set_pseudo_labels(torch.tensor([2, 0, 1, 1, 0]))
    assert float(model.head.fc.weight.abs().max()) < 0.1  # re-initialised
    img = torch.randn(2, 3, 16, 16)
    loss = model.loss([img], samples([0, 3]))['loss']
    logits = model.head.fc(model.backbone(img)[-1].mean(dim=(2, 3)))
    assert torch.allclose(
        loss, manual_ce(logits, torch.tensor([2, 1])), atol=1e-6
    )
    with pytest.raises(ValueError, match='num_samples'):
        model.set_pseudo_labels(torch.zeros(4, dtype=torch.long))


def test_odc_memory_update_centroids_and_small_clusters():
    from mmssl.models.algorithms.odc import ODCMemory

    mem = ODCMemory(
        num_samples=6, feat_dim=2, num_classes=3, momentum=0.5, min_cluster=2
    )
    feats = torch.tensor(
        [
            [1.0, 0.0],
            [1.0, 0.1],
            [0.0, 1.0],
            [0.1, 1.0],
            [-1.0, 0.0],
            [1.0, -0.1],
        ]
    )
    mem.init_memory(feats, torch.tensor([0, 0, 1, 1, 2, 0]))
    unit = F.normalize(feats, dim=1)
    assert torch.allclose(
        mem.centroids[1], F.normalize(unit[2] + unit[3], dim=0)
    )
    assert mem.cluster_sizes().tolist() == [3, 2, 1]
    # sample 2 moves towards (1, 0): m * (0, 1) + (1 - m) * (1, 0)
    change = mem.update_samples(torch.tensor([2]), torch.tensor([[1.0, 0.0]]))
    assert torch.allclose(
        mem.features[2], F.normalize(torch.tensor([0.5, 0.5]), dim=0)
    )
    # cos to centroid 0 (~(1, 0)) vs centroid 1 (~(0.05, 1)): equal-ish;
    # compute the expected label independently
    sims = mem.centroids @ F.normalize(torch.tensor([0.5, 0.5]), dim=0)
    assert int(mem.labels[2]) == int(sims.argmax())
    assert float(change) == float(int(sims.argmax()) != 1)
    assert 'memory.features' in {f'memory.{k}' for k in mem.state_dict()}


def test_odc_small_cluster_dissolved_and_refilled():
    """Cluster 2 (1 sample < min_cluster 2) is dissolved: its sample joins
    the nearest remaining centroid (cluster 1), and id 2 is reused by
    splitting the largest cluster (0: two tight pairs) by 2-means."""
    from mmssl.models.algorithms.odc import ODCMemory

    mem = ODCMemory(
        num_samples=7, feat_dim=2, num_classes=3, momentum=0.5, min_cluster=2
    )
    degrees = torch.tensor([0.0, 2.0, 60.0, 62.0, 180.0, 182.0, 250.0])
    rad = degrees * math.pi / 180
    feats = torch.stack([rad.cos(), rad.sin()], dim=1)
    mem.init_memory(feats, torch.tensor([0, 0, 0, 0, 1, 1, 2]))
    assert mem.deal_with_small_clusters() == [2]
    labels = mem.labels.tolist()
    # sample 6 (250 deg) is 70 deg from cluster 1 (181 deg), 219 deg from
    # cluster 0 (31 deg); the pairs {0, 1} and {2, 3} are split apart
    assert labels[4:] == [1, 1, 1]
    assert {tuple(labels[:2]), tuple(labels[2:4])} == {(0, 0), (2, 2)}
    assert mem.cluster_sizes().tolist() == [2, 3, 2]
    for k in range(3):  # centroids recomputed for the new clusters
        members = feats[mem.labels == k]
        torch.testing.assert_close(
            mem.centroids[k], F.normalize(members.sum(0), dim=0)
        )


def test_odc_reweight_and_loss():
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='ODC',
            num_samples=4,
            num_classes=3,
            feat_dim=4,
            backbone=BACKBONE,
            neck=dict(
                type='NonLinearNeck',
                in_channels=32,
                hid_channels=8,
                out_channels=4,
                num_layers=2,
                with_avg_pool=True,
            ),
            head=dict(type='PretextClsHead', in_channels=4, num_classes=3),
        )
    ).eval()
    img = torch.randn(2, 3, 16, 16)
    with pytest.raises(RuntimeError, match='ODCHook'):
        model.loss([img], samples([0, 1]))
    labels = torch.tensor([0, 0, 0, 1])
    model.memory.init_memory(torch.randn(4, 4), labels)
    model.set_reweight()
    # sizes 3, 1, 0 -> weights 3**-.5, 1, 0 scaled to mean 1 over 2
    raw = torch.tensor([3**-0.5, 1.0, 0.0])
    assert torch.allclose(model.class_weight, raw / raw.sum() * 2)
    out = model.loss([img], samples([0, 3]))
    feats = model.neck(model.backbone(img))[0]
    expected = manual_ce(
        model.head.fc(feats), torch.tensor([0, 1]), model.class_weight
    )
    assert torch.allclose(out['loss'], expected, atol=1e-6)
    assert 0 <= float(out['change_ratio']) <= 1


def test_spark_full_image_extracts_features_without_a_mask():
    model = MODELS.build(
        dict(
            type='SparKFullImage',
            input_size=64,
            downsample_raito=32,
            mask_ratio=0.5,
            enc_dec_norm_cfg=dict(type='SparseBatchNorm2d'),
            enc_dec_norm_dim=512,
            backbone=dict(
                type='SparseResNet', depth=18, out_indices=(0, 1, 2, 3)
            ),
            neck=dict(
                type='SparKLightDecoder',
                feature_dim=64,
                upsample_ratio=32,
                mid_channels=0,
                last_act=False,
            ),
            head=dict(
                type='SparKPretrainHead',
                loss=dict(type='PixelReconstructionLoss', criterion='L2'),
            ),
        )
    ).eval()
    img = torch.randn(2, 3, 64, 64)
    from mmpretrain.models.selfsup import SparK
    from mmpretrain.models.utils.sparse_modules import SparseHelper

    SparseHelper._cur_active = None  # outside training: no mask
    with pytest.raises(AttributeError), torch.no_grad():
        SparK.extract_feat(model, img)  # mmpretrain's own version fails
    with torch.no_grad():
        feats = model(img, mode='tensor')
    assert feats[-1].shape == (2, 512, 2, 2)
    assert bool(SparseHelper._cur_active.all())  # every patch active


def test_mff_full_image_features_are_the_unmasked_vit_forward():
    """mmpretrain's MFF.extract_feat masks 75% of the patches at random
    (MAEViT's default); MFFFullImage returns every token, deterministically,
    equal to a plain ViT with the same weights."""
    from mmpretrain.models.backbones import VisionTransformer
    from mmpretrain.models.selfsup import MFF

    arch = dict(
        embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64
    )
    model = MODELS.build(
        dict(
            type='MFFFullImage',
            backbone=dict(
                type='MFFViT',
                arch=arch,
                img_size=16,
                patch_size=4,
                mask_ratio=0.75,
                out_indices=[0, 1],
            ),
            neck=dict(
                type='MAEPretrainDecoder',
                num_patches=16,
                patch_size=4,
                embed_dim=32,
                decoder_embed_dim=16,
                decoder_depth=1,
                decoder_num_heads=2,
            ),
            head=dict(
                type='MAEPretrainHead',
                patch_size=4,
                loss=dict(type='PixelReconstructionLoss', criterion='L2'),
            ),
        )
    )
    model.init_weights()
    model.eval()
    img = torch.randn(3, 3, 16, 16)
    with torch.no_grad():
        broken = MFF.extract_feat(model, img)
        feats = model(img, mode='tensor')
        again = model(img, mode='tensor')
    # the bug being worked around: 4 of 16 patch tokens + CLS, plus the mask
    assert broken[0].shape == (3, 1 + 4, 32)
    assert len(feats) == 2
    assert all(f.shape == (3, 1 + 16, 32) for f in feats)
    torch.testing.assert_close(feats[-1], again[-1])
    plain = VisionTransformer(
        arch=arch,
        img_size=16,
        patch_size=4,
        out_indices=[0, 1],
        out_type='raw',
        final_norm=True,
    )
    plain.eval()  # mmpretrain backbones' train()/eval() return None
    missing, unexpected = plain.load_state_dict(
        model.backbone.state_dict(), strict=False
    )
    assert not missing, missing
    with torch.no_grad():
        ref = plain(img)
    torch.testing.assert_close(feats[-1], ref[-1])
    torch.testing.assert_close(feats[0], ref[0])
