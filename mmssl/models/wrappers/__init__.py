from .fully_shard import MMFullyShard, shard_units

__all__ = ['MMFullyShard', 'shard_units']
