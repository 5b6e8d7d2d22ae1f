"""Dataclass methods compiled once, reused by every later process
(protocol/common/method_cache.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MODULE = """
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Asked:
    name: str
    count: int = 0
"""


def run_python(code: str, where: Path) -> str:
    ran = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(where)},
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


@pytest.fixture
def package(tmp_path: Path) -> Path:
    (tmp_path / "cached").mkdir()
    (tmp_path / "cached" / "__init__.py").write_text("")
    (tmp_path / "cached" / "messages.py").write_text(MODULE)
    return tmp_path


USE = """
    from pathlib import Path
    from nbstage.protocol.common import method_cache

    method_cache.install(Path({cache!r}))
    import dataclasses
    from cached.messages import Asked

    asked = Asked("x", 2)
    assert asked == Asked("x", 2) and hash(asked) == hash(Asked("x", 2))
    assert repr(asked) == "Asked(name='x', count=2)"
    try:
        asked.count = 3
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("not frozen")
    print(len(method_cache._tables["cached.messages"]))
"""


def test_a_later_process_takes_every_method_from_the_cache(package: Path) -> None:
    cache = package / "cache"
    written = run_python(
        f"""
        from pathlib import Path
        from nbstage.protocol.common import method_cache

        print(method_cache.write(Path({str(cache)!r}), ("cached",)))
        """,
        package,
    )
    assert int(written.splitlines()[-1]) >= 5
    never_compile = USE.replace(
        "import dataclasses\n",
        "import dataclasses\n    method_cache.compile = None  # a call would fail\n",
    )
    assert run_python(never_compile.format(cache=str(cache)), package) == "0"


def test_without_a_cache_or_with_a_broken_one_methods_are_compiled(package: Path) -> None:
    cache = package / "cache"
    assert run_python(USE.format(cache=str(cache)), package) == "0"
    cache.mkdir()
    tag = sys.implementation.cache_tag
    (cache / f"cached.messages.{tag}.marshal").write_bytes(b"not marshal")
    assert run_python(USE.format(cache=str(cache)), package) == "0"


def test_a_changed_class_misses_and_is_compiled(package: Path) -> None:
    cache = package / "cache"
    run_python(
        f"""
        from pathlib import Path
        from nbstage.protocol.common import method_cache

        method_cache.write(Path({str(cache)!r}), ("cached",))
        """,
        package,
    )
    (package / "cached" / "messages.py").write_text(MODULE.replace("count: int", "number: int"))
    changed = USE.replace('Asked("x", 2)', 'Asked("x", number=2)').replace("count=2", "number=2")
    changed = changed.replace("asked.count = 3", "asked.number = 3")
    left = run_python(changed.format(cache=str(cache)), package)
    assert int(left) > 0, "the old class's methods should be left unused"


def test_modules_of_a_subpackage_are_cached_too(package: Path) -> None:
    """actors/daemon/room/ is a subpackage: its dataclasses are compiled once like the rest."""
    (package / "cached" / "inner").mkdir()
    (package / "cached" / "inner" / "__init__.py").write_text("")
    (package / "cached" / "inner" / "deeper.py").write_text(MODULE)
    cache = package / "cache"
    run_python(
        f"""
        from pathlib import Path
        from nbstage.protocol.common import method_cache

        method_cache.write(Path({str(cache)!r}), ("cached",))
        """,
        package,
    )
    tag = sys.implementation.cache_tag
    assert (cache / f"cached.inner.deeper.{tag}.marshal").exists()


def test_classes_whose_methods_share_a_source_all_take_them_from_the_cache(
    package: Path,
) -> None:
    """A table holds each source once; a second class with the same fields (the same
    ``__init__``, the same frozen refusals) takes the code the first one loaded."""
    twins = MODULE + "\n\n" + MODULE.split("\n\n\n")[1].replace("class Asked", "class Twin")
    (package / "cached" / "messages.py").write_text(twins)
    cache = package / "cache"
    run_python(
        f"""
        from pathlib import Path
        from nbstage.protocol.common import method_cache

        method_cache.write(Path({str(cache)!r}), ("cached",))
        """,
        package,
    )
    out = run_python(
        f"""
        from pathlib import Path
        from nbstage.protocol.common import method_cache

        method_cache.install(Path({str(cache)!r}))
        method_cache.compile = None  # a call would fail
        from cached.messages import Asked, Twin

        print(Twin("x", 2).count, Twin("x") != Asked("x"))
        """,
        package,
    )
    assert out == "2 True"
