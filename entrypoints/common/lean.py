"""Keeping the per-client processes small (SPEC §11: an idle `nbstage mcp` is two
processes and about 40 MB together), and the daemon's start light
(:func:`jsonschema_without_iri_grammar`).

asyncio imports ``ssl`` only to offer TLS, and loading OpenSSL costs each process
about 4 MB. `nbstage mcp` and its session child speak only stdio and Unix sockets,
so they keep it out. This must run before anything imports asyncio, and only in
those two processes: a process that does need TLS (the harness, with the MCP SDK)
never calls it.

thespian, at import, loads modules for features nbstage never uses: ``logging.config``
for ``logDefs`` (nbstage passes ``logDefs=False``), ``tempfile`` for the path of its
own log file, and its source loader (``zipfile``, ``importlib.abc``) for
``loadActorSource``. Together they cost each process about 2.4 MB.
:func:`thespian_without_extras` imports thespian with stand-ins for them that load
the real module the first time one is used, so every feature still works.

jsonschema, which nbformat imports to validate notebooks, imports ``rfc3987_syntax``
whenever it is installed (JupyterLab's ``jupyter_events`` asks for it), and that module
builds 38 Lark grammars at import: about 2 s of CPU and 22 MB on a quiet machine, ten
seconds under load. The daemon paid it before it could read its first notebook, and so
does every MCP SDK client (it checks results against each tool's ``outputSchema``).
Neither checks an ``iri`` format, so :func:`jsonschema_without_iri_grammar` defers that
module the same way: a check of that format, where one is made (Lab's jupyter_events),
imports it then.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any


def without_tls() -> None:
    sys.modules.setdefault("ssl", None)


class _Deferred:
    """Stands in for ``module.name``, a callable; a call imports the module and calls it."""

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(self._module), self._name)(*args, **kwargs)


class _StandIn(types.ModuleType):
    """A module in ``sys.modules`` only while thespian imports. The names thespian takes
    from it are ``_Deferred``; any other attribute, read later, comes from the real
    module."""

    def __init__(self, name: str, deferred: tuple[str, ...]) -> None:
        super().__init__(name)
        for attr in deferred:
            setattr(self, attr, _Deferred(name, attr))

    def __getattr__(self, attr: str) -> Any:
        if sys.modules.get(self.__name__) is self:
            raise AttributeError(attr)
        return getattr(importlib.import_module(self.__name__), attr)


_THESPIAN_EXTRAS = {
    "logging.config": ("dictConfig",),
    "tempfile": (),
    "thespian.system.sourceLoader": ("loadModuleFromHashSource", "SourceHashFinder"),
}


def _import_with_stand_ins(module: str, extras: dict[str, tuple[str, ...]]) -> None:
    """Import ``module`` while ``extras`` are stand-ins; they leave ``sys.modules`` as soon
    as it is in."""
    stand_ins = {
        name: _StandIn(name, deferred)
        for name, deferred in extras.items()
        if name not in sys.modules
    }
    sys.modules.update(stand_ins)
    try:
        importlib.import_module(module)
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


def thespian_without_extras() -> None:
    """Import thespian's actors and ``simpleSystemBase`` without the modules above.
    It must run before anything imports thespian."""
    _import_with_stand_ins("thespian.system.simpleSystemBase", _THESPIAN_EXTRAS)


_JSONSCHEMA_IMPORT = threading.Lock()
"""Held while jsonschema comes in: the daemon's rooms open notebooks on several worker
threads at once, and a second caller must neither look for ``rfc3987_syntax`` while its
stand-in is in ``sys.modules`` nor take a jsonschema that is half imported."""


def jsonschema_without_iri_grammar() -> None:
    """Import jsonschema with ``rfc3987_syntax`` deferred to its first use. It must run
    before anything imports jsonschema (nbformat does); without that module it does
    nothing. Safe to call from many threads at once."""
    with _JSONSCHEMA_IMPORT:
        if "jsonschema" in sys.modules or importlib.util.find_spec("rfc3987_syntax") is None:
            return
        _import_with_stand_ins("jsonschema", {"rfc3987_syntax": ("is_valid_syntax",)})
