"""``@frozen``: nbstage's frozen, slotted dataclass.

It is ``dataclass(frozen=True, slots=True)``, except that the methods which do not
depend on a class's signature are shared by every such class instead of being made for
each one: ``__eq__``, ``__hash__``, ``__repr__``, and the ``__setattr__`` and
``__delattr__`` that refuse to change an instance. They read the field names they need
from the class. dataclasses is asked for no ``__eq__`` or ``__repr__`` (so
``__dataclass_params__`` says ``eq=False, repr=False``); it still makes the two refusals,
which are replaced at once, because a frozen class gets them whatever is asked.

Why: every nbstage process defines a few hundred of these classes (the messages in
``protocol/``, and the actors' own). Generated, those five methods cost a class about
7 kB, half of all it costs, in every process; ADR 0002, "Fifth pass".

What the shared methods do is what dataclasses' would:
- instances are equal only to instances of the very same class, by the fields that
  take part in comparison (``field(compare=False)`` leaves one out);
- the hash is that of the fields that take part in hashing (``field(hash=...)``, else
  comparison), so equal instances hash alike;
- ``repr`` is ``Name(field=value, ...)`` over the fields shown in repr;
- assigning or deleting a field raises ``dataclasses.FrozenInstanceError``.

A method written in the class body is kept, as dataclasses keeps it.

A class without a docstring gets dataclasses' own, ``Name(field: type, ...)``, made when
it is first read rather than when the class is: dataclasses builds it with
``inspect.signature``, a tenth of the time it takes to define a class, and no process
reads these docs as it starts.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from functools import cache
from operator import attrgetter
from typing import Any, TypeVar

T = TypeVar("T")


@cache
def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    """Read ``names`` from an instance, always as a tuple (``attrgetter`` of one name
    returns the bare value, which would compare a lone NaN field unlike dataclasses).
    Classes with the same names share one."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda instance: (one(instance),)
    return lambda instance: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        compared = self.__class__.__frozen_compared__
        return compared(self) == compared(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__.__frozen_hashed__(self))


def _repr(self: Any) -> str:
    cls = self.__class__
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in cls.__frozen_shown__)
    return f"{cls.__qualname__}({shown})"


def _refuses(instance: Any, name: str) -> bool:
    """As dataclasses decides: any name on a ``@frozen`` class itself; on a subclass that
    is not one, only its fields."""
    cls = instance.__class__
    return cls.__dict__.get("__setattr__") is _setattr or name in cls.__dataclass_fields__


def _setattr(self: Any, name: str, value: Any) -> None:
    if _refuses(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self: Any, name: str) -> None:
    if _refuses(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _has_explicit_hash(body: dict[str, Any]) -> bool:
    """dataclasses' rule: a body that defines ``__eq__`` alone gets ``__hash__ = None``
    from Python, which does not count as defining a hash."""
    own = body.get("__hash__", dataclasses.MISSING)
    return not (own is dataclasses.MISSING or (own is None and "__eq__" in body))


def _share_methods(made: type[Any], body: dict[str, Any]) -> None:
    fields = dataclasses.fields(made)
    # typed as Any: the class gets attributes that its declaration cannot list
    cls: Any = made
    cls.__frozen_compared__ = _getter(tuple(f.name for f in fields if f.compare))
    cls.__frozen_hashed__ = _getter(
        tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    )
    cls.__frozen_shown__ = tuple(f.name for f in fields if f.repr)
    if "__eq__" not in body:
        cls.__eq__ = _eq
    if not _has_explicit_hash(body):
        cls.__hash__ = _hash
    if "__repr__" not in body:
        cls.__repr__ = _repr
    cls.__setattr__ = _setattr
    cls.__delattr__ = _delattr


class _GeneratedDoc:
    """A class's ``__doc__`` as dataclasses would write it, made when first read (a
    descriptor in a class's ``__doc__`` is called for ``cls.__doc__`` too)."""

    def __get__(self, instance: object, owner: type) -> str:
        doc = owner.__name__ + str(inspect.signature(owner)).replace(" -> None", "")
        owner.__doc__ = doc
        return doc


_PLACEHOLDER_DOC = "made when read: _GeneratedDoc"


@typing.dataclass_transform(
    frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field)
)
def frozen(cls: type[T] | None = None, /, **options: Any) -> Any:
    """``@frozen`` or ``@frozen(kw_only=True, ...)``; ``options`` go to ``dataclass``
    (``frozen``, ``slots``, ``eq`` and ``repr`` are this decorator's to set)."""

    def make(cls: type[T]) -> type[T]:
        body = dict(cls.__dict__)
        undocumented = not cls.__doc__
        if undocumented:
            cls.__doc__ = _PLACEHOLDER_DOC
        made = dataclasses.dataclass(cls, frozen=True, slots=True, eq=False, repr=False, **options)
        if undocumented:
            made.__doc__ = _GeneratedDoc()  # type: ignore[assignment]
        _share_methods(made, body)
        return made

    return make if cls is None else make(cls)
