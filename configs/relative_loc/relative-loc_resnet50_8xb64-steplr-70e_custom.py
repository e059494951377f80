# The relative-loc_resnet50_8xb64-steplr-70e_in1k recipe on your own folder of unlabeled images:
#   bash tools/dist_train.sh configs/relative_loc/relative-loc_resnet50_8xb64-steplr-70e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# mmssl's ImageFolderDataset: one folder or a list, searched recursively;
# unreadable files are skipped and counted (LoadImageRobust).
_base_ = './relative-loc_resnet50_8xb64-steplr-70e_in1k.py'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root='data/custom',
        pipeline={{_base_.train_pipeline}},
    )
)
