# Semi-supervised ImageNet: the ViT-S/16 fine-tuning recipe on 1 % of the
# training labels, a per-class stratified subset fixed by its seed
# (LabelSubset; the protocol of Chen et al., 2020, SimCLR, and of the DINO
# papers, which draw the subset per class as well). Evaluated on the full
# val split. The subset is round(0.01 x n_c) images of each class c
# (at least one); change the draw with train_dataloader.dataset.seed.
#   bash tools/dist_train.sh \
#       configs/benchmarks/finetune/finetune_vit-small-p16_8xb128-coslr-100e_in1k-1pct.py 8 \
#       --cfg-options model.init_cfg.checkpoint=CKPT
# The 10 % config with a tenth of its fraction (the same seed and holdout).
_base_ = ['./finetune_vit-small-p16_8xb128-coslr-100e_in1k-10pct.py']

train_dataloader = dict(dataset=dict(fraction=0.01))
