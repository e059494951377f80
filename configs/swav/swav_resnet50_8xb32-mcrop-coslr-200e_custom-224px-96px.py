# The swav_resnet50_8xb32-mcrop-coslr-200e_in1k-224px-96px recipe on your own folder of unlabeled images
# (any sub-folder layout; every image file below data_root is used):
#   bash tools/dist_train.sh configs/swav/swav_resnet50_8xb32-mcrop-coslr-200e_custom-224px-96px.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# mmssl's ImageFolderDataset: one folder or a list, searched recursively;
# unreadable files are skipped and counted (LoadImageRobust).
_base_ = './swav_resnet50_8xb32-mcrop-coslr-200e_in1k-224px-96px.py'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root='data/custom',
        pipeline={{_base_.train_pipeline}},
    )
)
