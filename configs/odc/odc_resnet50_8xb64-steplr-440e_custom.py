# The odc_resnet50_8xb64-steplr-440e_in1k recipe on your own folder of unlabeled images:
#   bash tools/dist_train.sh configs/odc/odc_resnet50_8xb64-steplr-440e_custom.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# Set model.num_samples to the number of images in your folder:
#   --cfg-options model.num_samples=N (an error names N if it is wrong)
# mmssl's ImageFolderDataset: one folder or a list, searched recursively;
# unreadable files are skipped and counted (LoadImageRobust).
_base_ = './odc_resnet50_8xb64-steplr-440e_in1k.py'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root='data/custom',
        pipeline={{_base_.train_pipeline}},
    )
)
