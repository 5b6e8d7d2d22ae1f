"""`nbstage mcp` and its session child start lean (entrypoints/common/lean.py) and still behave
as with all of thespian's imports."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_python(code: str) -> str:
    ran = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_thespian_comes_in_without_its_unused_imports_and_they_still_work() -> None:
    out = run_python(
        """
        import sys
        from nbstage.entrypoints.common.lean import thespian_without_extras

        thespian_without_extras()
        from nbstage.actors.common.thespian_tweaks import InProcessSystem

        InProcessSystem().shutdown()
        unused = ("logging.config", "tempfile", "zipfile", "thespian.system.sourceLoader")
        print(*sorted(name for name in unused if name in sys.modules))
        print("--")

        from thespian.system import simpleSystemBase, utilis

        assert utilis.tempfile.gettempdir() == __import__("tempfile").gettempdir()
        simpleSystemBase.dictConfig({"version": 1, "incremental": True})
        import logging.config

        assert logging.config.dictConfig is not simpleSystemBase.dictConfig
        try:
            simpleSystemBase.SourceHashFinder("nohash", lambda v: v, b"not a zip").getZipNames()
        except Exception as exc:
            print(type(exc).__name__)
        """
    )
    assert out.split() == ["--", "BadZipFile"]
