# The milan_vit-base-p16_16xb256-amp-coslr-400e_in1k recipe on your own folder of unlabeled images
# (any sub-folder layout; every image file below data_root is used):
#   bash tools/dist_train.sh configs/milan/milan_vit-base-p16_16xb256-amp-coslr-400e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# mmssl's ImageFolderDataset: one folder or a list, searched recursively;
# unreadable files are skipped and counted (LoadImageRobust).
_base_ = './milan_vit-base-p16_16xb256-amp-coslr-400e_in1k.py'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root='data/custom',
        pipeline={{_base_.train_pipeline}},
    )
)
