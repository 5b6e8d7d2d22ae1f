import nbstage.protocol  # noqa: F401 - before any dataclass: see protocol/common/method_cache.py
