# The simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px recipe on your own folder of unlabeled images
# (any sub-folder layout; every image file below data_root is used):
#   bash tools/dist_train.sh configs/simmim/simmim_swin-base-w6_8xb256-amp-coslr-100e_custom-192px.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# mmssl's ImageFolderDataset: one folder or a list, searched recursively;
# unreadable files are skipped and counted (LoadImageRobust).
_base_ = './simmim_swin-base-w6_8xb256-amp-coslr-100e_in1k-192px.py'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root='data/custom',
        pipeline={{_base_.train_pipeline}},
    )
)
