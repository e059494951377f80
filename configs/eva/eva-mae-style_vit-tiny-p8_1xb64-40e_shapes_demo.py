# EVA demo (eva-mae-style_vit-tiny-p4_1xb64-4e_demo.py) on the bundled 64 px
# shapes set instead of the digits, with MAE's shapes recipe
# (configs/mae/mae_vit-tiny-p8_1xb64-40e_shapes_demo.py): the same ViT-tiny
# with 8 px patches on 64 px images (the same 64 tokens, 75 % masked), 64 px
# random resized crops and flips, shapes pixel statistics, kNN on
# data/shapes/val, and 40 epochs (4 are far too few on this set). The random
# stand-in CLIP target sees the same 64 px image in 8 px patches, so its
# 64 tokens still line up with the student's, and adds its attention output
# to the tokens (residual=True): without that its near-uniform random
# attention gives all tokens of an image the same target (README.md). MIM
# features are judged by the linear probe (tools/misc/knn_eval.py --linear).
#   python tools/misc/make_shapes_dataset.py data/shapes
#   python tools/train.py configs/eva/eva-mae-style_vit-tiny-p8_1xb64-40e_shapes_demo.py
# Everything but the model is the MILAN shapes demo's; EVA swaps in MAE's
# encoder and decoder, as its digits demo does over MILAN's.
_base_ = '../milan/milan_vit-tiny-p8_1xb64-40e_shapes_demo.py'

model = dict(
    type='EVA',
    backbone=dict(type='MAEViT'),
    neck=dict(type='MAEPretrainDecoder', mlp_ratio=4),
)
