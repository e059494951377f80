# DINOv3 stage 2 of 3: Gram anchoring. Starts from the full stage-1
# checkpoint (student, teacher, heads, loss buffers) by one key,
# model.warm_start, and adds the `gram` term: the MSE between the Gram
# matrices of the L2-normalised patch features of the student and of a
# Gram teacher (a snapshot of the EMA teacher taken before the first
# iteration, refreshed every 1000 iterations, at most 3 times; DINOv3
# refreshes every 10k iterations). The Gram teacher sees 2x copies of the
# global crops (448 px) and its patch features are resized (bicubic) to the
# student's grid. Local-crop DINO terms weigh 0.5 (DINOv3 down-weights them
# in this stage). Schedules restart at 0; 10% warm-up of the lr.
#   python tools/train.py configs/dinov3/dinov3_vit-s16_1xb64-100e_gram_custom.py \
#       --work-dir work_dirs/dinov3_vit-s16_1xb64-100e_gram_custom \
#       --cfg-options train_dataloader.dataset.data_root=/data/my_images
# Another stage-1 checkpoint: model.warm_start.checkpoint=PATH.
_base_ = [
    './dinov3_vit-s16_1xb64-100e_custom.py',
    '../_base_/schedules/teacher_student_hooks.py',
    '../_base_/datasets/multicrop_224px.py',
]
_stage1 = 'work_dirs/dinov3_vit-s16_1xb64-100e_custom/epoch_100.pth'

train_pipeline = _base_.pop('_multicrop_224px')['dinov3_gram']  # noqa: F821
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
model = dict(
    warm_start=dict(checkpoint=_stage1, format='mmssl_full'),
    num_gram_crops=2,  # the last 2 views: Gram-teacher copies
    terms=dict(gram=dict(type='GramLoss', weight=1.0)),
    loss_weights=dict(dino_local=0.5),
)
train_cfg = dict(max_epochs=30)
custom_hooks = _base_.pop('_teacher_student_hooks')['dinov3_gram']  # noqa: F821
