"""``@frozen`` (protocol/common/frozen.py) behaves as ``dataclass(frozen=True, slots=True)``: each
case is run on a class of each kind and the outcomes must agree."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from nbstage.protocol.common import frozen as frozen_module
from nbstage.protocol.common.frozen import frozen


def define(decorate: Callable[..., Any]) -> dict[str, type]:
    @decorate
    class Point:
        x: int
        y: str = "a"
        tags: list = field(default_factory=list, compare=False)
        shown: float = field(default=0.0, repr=False)

    @decorate
    class Point3(Point):
        z: float = 0.0

    @decorate
    class Lone:
        value: float

    @decorate
    class Empty:
        pass

    @decorate
    class OwnEq:
        key: str
        noise: int = 0

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq) and other.key == self.key

    @decorate
    class OwnHash:
        key: str

        def __hash__(self) -> int:
            return 7

    @decorate
    class OwnRepr:
        key: str

        def __repr__(self) -> str:
            return "<own>"

    @decorate
    class HashOnly:
        key: str
        counted: int = field(default=0, hash=False)

    return {
        cls.__name__: cls for cls in (Point, Point3, Lone, Empty, OwnEq, OwnHash, OwnRepr, HashOnly)
    }


def outcome(action: Callable[[], Any]) -> Any:
    try:
        return ("value", action())
    except Exception as exc:
        return ("raised", type(exc), str(exc))


CASES: dict[str, Callable[[dict[str, type]], Any]] = {
    "equal": lambda k: k["Point"](1) == k["Point"](1),
    "unequal field": lambda k: k["Point"](1) == k["Point"](1, "b"),
    "not-equal operator": lambda k: k["Point"](1) != k["Point"](2),
    "compare=False ignored": lambda k: k["Point"](1, tags=[1]) == k["Point"](1, tags=[2]),
    "other class": lambda k: k["Point"](1) == k["Point3"](1),
    "other type": lambda k: k["Point"](1) == (1, "a"),
    "subclass fields": lambda k: k["Point3"](1, z=2.0) == k["Point3"](1, z=3.0),
    "lone NaN is itself": lambda k: (lambda p: p == p)(k["Lone"](math.nan)),
    "empty equal": lambda k: k["Empty"]() == k["Empty"](),
    "equal hashes": lambda k: hash(k["Point"](1, tags=[1])) == hash(k["Point"](1, tags=[2])),
    "unhashable field": lambda k: hash(k["Lone"]([1])),
    "hash=False": lambda k: hash(k["HashOnly"]("a", 1)) == hash(k["HashOnly"]("a", 2)),
    "hash=False still compared": lambda k: k["HashOnly"]("a", 1) == k["HashOnly"]("a", 2),
    "own eq kept": lambda k: k["OwnEq"]("a", 1) == k["OwnEq"]("a", 2),
    "own eq is hashable": lambda k: hash(k["OwnEq"]("a")) == hash(k["OwnEq"]("a")),
    "own hash kept": lambda k: hash(k["OwnHash"]("a")),
    "own repr kept": lambda k: repr(k["OwnRepr"]("a")),
    "repr": lambda k: repr(k["Point"](1, tags=[2], shown=5.0)),
    "subclass repr": lambda k: repr(k["Point3"](1)),
    "empty repr": lambda k: repr(k["Empty"]()),
    "assign field": lambda k: setattr(k["Point"](1), "x", 2),
    "delete field": lambda k: delattr(k["Point"](1), "x"),
    "no __dict__": lambda k: hasattr(k["Point"](1), "__dict__"),
    "match args": lambda k: k["Point3"].__match_args__,
    "slots": lambda k: k["Point"].__slots__,
    "replace": lambda k: dataclasses.replace(k["Point"](1), y="b") == k["Point"](1, "b"),
    "copy": lambda k: copy.deepcopy(k["Point3"](1, z=2.0)) == k["Point3"](1, z=2.0),
    "generated doc": lambda k: k["Point"].__doc__,
    "is dataclass": lambda k: dataclasses.is_dataclass(k["Point3"]),
    "frozen params": lambda k: k["Point"].__dataclass_params__.frozen,
    "fields": lambda k: [f.name for f in dataclasses.fields(k["Point3"])],
    "positional init": lambda k: k["Point"](1, "b").y,
    "missing argument": lambda k: k["Point"](),
}


@pytest.fixture(scope="module")
def kinds() -> tuple[dict[str, type], dict[str, type]]:
    return define(frozen), define(dataclass(frozen=True, slots=True))


@pytest.mark.parametrize("case", CASES)
def test_frozen_agrees_with_dataclasses(case: str, kinds: tuple[dict, dict]) -> None:
    ours, theirs = kinds
    assert outcome(lambda: CASES[case](ours)) == outcome(lambda: CASES[case](theirs))


def test_a_name_that_is_no_field_is_refused_too() -> None:
    """Here dataclasses' own slotted class fails with a TypeError from ``super()`` (its
    closure holds the class from before slots were added); either way nothing is set."""
    point = define(frozen)["Point"](1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.other = 2


@frozen
class Sample:
    """Module level, so that pickle finds it by name."""

    name: str
    count: int = 0


def test_an_instance_survives_pickle() -> None:
    assert pickle.loads(pickle.dumps(Sample("x", 2))) == Sample("x", 2)


def test_options_reach_dataclass() -> None:
    @frozen(kw_only=True)
    class Named:
        a: int

    assert Named(a=1).a == 1
    with pytest.raises(TypeError):
        Named(1)


def test_no_method_but_init_is_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``@frozen`` saves: dataclasses compiles nothing but ``__init__`` and the
    refusals it replaces."""
    compiled: list[str] = []
    real_exec = dataclasses.exec  # type: ignore[attr-defined]

    def counting_exec(source: Any, *args: Any) -> None:
        compiled.append(source if isinstance(source, str) else "<code>")
        real_exec(source, *args)

    monkeypatch.setattr(dataclasses, "exec", counting_exec, raising=False)

    @frozen
    class Counted:
        a: int
        b: str

    assert not any(name in text for text in compiled for name in ("__eq__", "__hash__", "__repr__"))
    assert any("__init__" in text for text in compiled)
    assert Counted.__eq__ is frozen_module._eq
    assert Counted.__hash__ is frozen_module._hash
    assert Counted.__repr__ is frozen_module._repr


def test_the_generated_doc_is_made_when_read_not_when_the_class_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("signature taken while the class was defined")

    with monkeypatch.context() as patched:
        patched.setattr(inspect, "signature", refuse)

        @frozen
        class Quiet:
            name: str
            count: int = 0

    assert Quiet.__doc__ == "Quiet(name: 'str', count: 'int' = 0)"
    assert Quiet("a").__doc__ == Quiet.__doc__
