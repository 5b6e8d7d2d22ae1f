"""Keeping the per-client processes small (SPEC §11: an idle `nbstage mcp` is two
processes and about 40 MB together), and the daemon's start light
(:func:`without_iri_grammars`).

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
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any


def without_tls() -> None:
    sys.modules.setdefault("ssl", None)


def without_iri_grammars() -> None:
    """Keep ``rfc3987_syntax`` out, so that importing jsonschema costs 0.2 s, not 2.

    JupyterLab's jupyter_events asks for ``jsonschema[format-nongpl]``, which installs
    rfc3987-syntax, and jsonschema imports it with itself to offer the ``iri`` formats. As
    it is imported, rfc3987-syntax builds 38 lark grammars: about 2 s of CPU and 22 MB
    in every process that imports jsonschema. The daemon does (nbformat), and so do
    the MCP SDK's clients (they check results against each tool's ``outputSchema``);
    neither ever checks a format (no format checker is passed), so without it jsonschema
    validates exactly as before. Call it before jsonschema is imported; the Lab process
    (jupyter_events checks formats) never calls it."""
    sys.modules.setdefault("rfc3987_syntax", None)


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


def thespian_without_extras() -> None:
    """Import thespian's actors and ``simpleSystemBase`` without the modules above.
    It must run before anything imports thespian, and its stand-ins leave ``sys.modules``
    as soon as thespian is in."""
    stand_ins = {
        name: _StandIn(name, deferred)
        for name, deferred in _THESPIAN_EXTRAS.items()
        if name not in sys.modules
    }
    sys.modules.update(stand_ins)
    try:
        import thespian.system.simpleSystemBase  # noqa: F401
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
