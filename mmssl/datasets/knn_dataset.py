"""A labelled bank split and a labelled query split, for kNN evaluation."""

from mmengine.dataset import BaseDataset
from torch.utils.data import Dataset

from mmssl.registry import DATASETS


@DATASETS.register_module()
class KNNDataset(Dataset):
    """Concatenates a ``bank`` (train) and a ``query`` (val) dataset.

    Every sample's data sample gets ``knn_role`` = ``'bank'`` or
    ``'query'`` in its metainfo, which :class:`KNNAccuracy` reads. Both
    datasets must yield packed samples with ``gt_label`` (e.g.
    mmpretrain's ``CustomDataset`` over ``<root>/<class>/*.png``).

    Args:
        bank (dict | Dataset): Labelled feature-bank dataset.
        query (dict | Dataset): Labelled evaluation dataset.
    """

    def __init__(self, bank, query) -> None:
        self.bank = DATASETS.build(bank) if isinstance(bank, dict) else bank
        self.query = (
            DATASETS.build(query) if isinstance(query, dict) else query
        )
        if len(self.bank) == 0 or len(self.query) == 0:
            raise ValueError(
                f'KNNDataset needs non-empty splits: bank has '
                f'{len(self.bank)} and query {len(self.query)} samples.'
            )

    @property
    def metainfo(self) -> dict:
        meta = getattr(self.query, 'metainfo', None)
        return dict(meta) if meta else {}

    def __len__(self) -> int:
        return len(self.bank) + len(self.query)

    def __getitem__(self, idx: int) -> dict:
        if idx < len(self.bank):
            data, role = self.bank[idx], 'bank'
        else:
            data, role = self.query[idx - len(self.bank)], 'query'
        data['data_samples'].set_metainfo(dict(knn_role=role))
        return data

    def full_init(self) -> None:
        for ds in (self.bank, self.query):
            if isinstance(ds, BaseDataset):
                ds.full_init()
