"""The classes of protocol/: one name each, and every dataclass frozen and slotted.

thespian routes a message to ``receiveMsg_<ClassName>`` by the class's name alone, so
two message classes with one name, in different modules, would share a handler.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections import Counter

import nbstage.protocol


def _protocol_classes() -> set[type]:
    """Every class defined in a protocol module, once even where a module aliases it."""
    classes = set()
    # walk_packages, not iter_modules: a subpackage's modules must not go unchecked.
    for info in pkgutil.walk_packages(nbstage.protocol.__path__, "nbstage.protocol."):
        module = importlib.import_module(info.name)
        classes |= {
            value
            for value in vars(module).values()
            if inspect.isclass(value) and value.__module__ == module.__name__
        }
    return classes


CLASSES = _protocol_classes()


def test_no_two_protocol_classes_share_a_name() -> None:
    counts = Counter(cls.__name__ for cls in CLASSES)
    shared = sorted(
        f"{cls.__module__}.{cls.__name__}" for cls in CLASSES if counts[cls.__name__] > 1
    )
    assert shared == []


def test_every_protocol_dataclass_is_frozen_and_slotted() -> None:
    loose = [
        f"{cls.__module__}.{cls.__name__}"
        for cls in CLASSES
        if dataclasses.is_dataclass(cls)
        and not (cls.__dataclass_params__.frozen and "__slots__" in cls.__dict__)
    ]
    assert loose == []
