"""Compiled dataclass methods, kept from one process to the next.

Every nbstage process defines a few hundred frozen dataclasses as it starts (the
messages in protocol/), and ``dataclasses`` compiles five to eight methods for each from
source it generates: about two thirds of the time it takes to import the protocol
(ADR 0002). The code depends on that source alone, so ``make bytecode`` compiles it once
into files beside the bytecode (``write``), and once
``install`` has run, ``dataclasses`` takes the code from that file for any source it
holds; other source is compiled as it always is. Entries go as they are used, and
``forget`` drops the rest once a process has started. A source met again (two classes
with the same fields make the same ``__init__``) takes the code already loaded: a table
holds each source once.

There is one file for each module that defines dataclasses, read when that module first
defines one, so a process holds only what it uses. Each is a marshal of ``{source:
marshalled code}``; like ``__pycache__``'s files it is specific to one Python (its name
carries the cache tag), and one that cannot be read is ignored. They lie in this
package's ``__pycache__``, under the same trust as the bytecode there.
"""

import builtins
import dataclasses
import importlib
import marshal
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

CACHE = Path(__file__).resolve().parent / "__pycache__" / "dataclass-methods"
PACKAGES = ("nbstage.protocol", "nbstage.actors", "nbstage.entrypoints")

_tables: dict[str, dict[str, bytes]] = {}
"""By module: the code of each method source that module's dataclasses need."""
_loaded: dict[str, CodeType] = {}
"""Every source whose code this process has loaded or compiled, until ``forget``."""
_compiled: dict[str, dict[str, bytes]] | None = None
"""While ``write`` runs: by module, every source compiled, with its code."""
_cache = CACHE


def _table_file(cache: Path, module: str) -> Path:
    return cache / f"{module}.{sys.implementation.cache_tag}.marshal"


def _table_of(module: str) -> dict[str, bytes]:
    table = _tables.get(module)
    if table is None:
        try:
            table = marshal.loads(_table_file(_cache, module).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            table = {}
        _tables[module] = table if isinstance(table, dict) else {}
    return _tables[module]


def _exec(
    source: str | CodeType,
    globals: dict[str, Any] | None = None,
    locals: Mapping[str, object] | None = None,
    /,
) -> None:
    """``exec`` as ``dataclasses`` calls it, with its source's code from the table of
    the module that defines the class."""
    if isinstance(source, str):
        module = (globals or {}).get("__name__", "")
        stored = _table_of(module).pop(source, None)
        code = _loaded.get(source)
        if code is None:
            code = (
                marshal.loads(stored)
                if stored is not None
                else compile(source, "<string>", "exec", dont_inherit=True)
            )
            _loaded[source] = code
        if _compiled is not None:
            _compiled.setdefault(module, {})[source] = marshal.dumps(code)
        source = code
    builtins.exec(source, globals, locals)


def install(cache: Path = CACHE) -> None:
    global _cache
    _cache = cache
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # dataclasses' own global


def forget() -> None:
    """Start-up is over: drop what was not used."""
    _tables.clear()
    _loaded.clear()


def write(cache: Path = CACHE, packages: tuple[str, ...] = PACKAGES) -> int:
    """Import every module of ``packages`` and keep, module by module, the code of every
    dataclass method compiled meanwhile; returns how many. Run it in a fresh process."""
    import pkgutil  # here alone: every process imports this module, only `make bytecode` this

    global _compiled
    _compiled = {}
    install(cache)
    _tables.clear()
    for package in packages:
        root = importlib.import_module(package)
        # walk_packages goes into subpackages (actors/daemon/room/), iter_modules would not.
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            importlib.import_module(module.name)
    found, _compiled = _compiled, None
    cache.mkdir(parents=True, exist_ok=True)
    for old in cache.glob(f"*.{sys.implementation.cache_tag}.marshal"):
        old.unlink()
    for name, table in found.items():
        target = _table_file(cache, name)
        temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        temp.write_bytes(marshal.dumps(table))
        os.replace(temp, target)
    return sum(len(table) for table in found.values())
