# Any ImageNet recipe on your own folder(s) of unlabeled images: the recipe
# named by RECIPE (a path, absolute or relative to this folder) with its
# dataset replaced by mmssl's ImageFolderDataset (any sub-folder layout,
# searched recursively; unreadable files are skipped and counted) and its
# own training pipeline. Nothing else of the recipe changes.
#   RECIPE=$PWD/configs/mae/mae_vit-base-p16_8xb512-amp-coslr-300e_in1k.py \
#   bash tools/dist_train.sh configs/custom/image_folder.py 8 \
#       --cfg-options train_dataloader.dataset.data_root=/path/to/images
# The work dir is work_dirs/<recipe name>_folder. Without RECIPE the config
# stops with "`RECIPE` cannot be found in `os.environ`". See
# docs/en/custom_dataset.md ("An ImageNet recipe on your folder").
_base_ = '{{$RECIPE:}}'

train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root='data/custom',
        pipeline={{_base_.train_pipeline}},
    )
)
work_dir = 'work_dirs/' + '{{$RECIPE:}}'.rsplit('/', 1)[-1][:-3] + '_folder'
# RankMe of the backbone's features on 1024 of your images, before training
# (the random-init value) and after every epoch: a figure that needs no
# labels (RankMeHook, docs/en/custom_dataset.md), unless the recipe has it.
custom_hooks = _base_.get('custom_hooks', [])
if not any(__h.get('type') == 'RankMeHook' for __h in custom_hooks):
    custom_hooks = custom_hooks + [dict(type='RankMeHook')]
