# The simsiam_resnet50_8xb32-coslr-100e_in1k recipe on your own folder of unlabeled images
# (any sub-folder layout; every image file below data_root is used):
#   bash tools/dist_train.sh configs/simsiam/simsiam_resnet50_8xb32-coslr-100e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# NOTE: mmpretrain's CustomDataset(with_label=False) for now; it takes one
# folder.  mmssl's ImageFolderDataset (mixed sizes, several folders, bad
# files skipped) will replace it.
_base_ = './simsiam_resnet50_8xb32-coslr-100e_in1k.py'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='CustomDataset',
        data_root='data/custom',
        with_label=False,
        pipeline={{_base_.train_pipeline}}))
