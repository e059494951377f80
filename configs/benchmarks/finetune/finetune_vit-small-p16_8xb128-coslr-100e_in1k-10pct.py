# Semi-supervised ImageNet: the ViT-S/16 fine-tuning recipe on 10 % of the
# training labels, a per-class stratified subset fixed by its seed
# (LabelSubset; the protocol of Chen et al., 2020, SimCLR, and of the DINO
# papers, which draw the subset per class as well). Evaluated on the full
# val split. The subset is round(0.1 x n_c) images of each class c
# (at least one); change the draw with train_dataloader.dataset.seed.
#   bash tools/dist_train.sh \
#       configs/benchmarks/finetune/finetune_vit-small-p16_8xb128-coslr-100e_in1k-10pct.py 8 \
#       --cfg-options model.init_cfg.checkpoint=CKPT
_base_ = ['./finetune_vit-small-p16_8xb128-coslr-100e_in1k.py']

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='LabelSubset',
        dataset={{_base_.train_dataloader.dataset}},
        fraction=0.1,
        holdout=0,
        seed=0,
    ),
)
