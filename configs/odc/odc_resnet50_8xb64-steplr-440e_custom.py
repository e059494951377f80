# The odc_resnet50_8xb64-steplr-440e_in1k recipe on your own folder of unlabeled images:
#   bash tools/dist_train.sh configs/odc/odc_resnet50_8xb64-steplr-440e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# Set model.num_samples to the number of images in your folder:
#   --cfg-options model.num_samples=N (an error names N if it is wrong)
# NOTE: mmpretrain's CustomDataset(with_label=False) for now; it takes one
# folder.  mmssl's ImageFolderDataset will replace it.
_base_ = './odc_resnet50_8xb64-steplr-440e_in1k.py'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='CustomDataset',
        data_root='data/custom',
        with_label=False,
        pipeline={{_base_.train_pipeline}}))
