from .bad_file_hook import BadFileCounter, BadFileSummaryHook, collect_skipped

__all__ = ['BadFileSummaryHook', 'BadFileCounter', 'collect_skipped']
