import nbstage.protocol  # noqa: F401 - before any dataclass: see protocol/method_cache.py
