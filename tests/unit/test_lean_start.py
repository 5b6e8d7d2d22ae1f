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


def loaded_after(imports: str, watched: tuple[str, ...]) -> list[str]:
    """Which of ``watched`` are in sys.modules once a lean process has run ``imports``."""
    out = run_python(
        f"""
        import sys
        from nbstage.entrypoints.common.lean import thespian_without_extras, without_tls

        without_tls()
        thespian_without_extras()
        {imports}
        print(*sorted(name for name in {watched!r} if name in sys.modules))
        """
    )
    return out.split()


# Each of these grew an idle `nbstage mcp` (SPEC §11, 40 MB for both processes) when it came
# in at start: _hashlib loads OpenSSL's libcrypto (3.6 MB RSS); output_bounds takes the
# daemon's request and reply classes with it (1.2 MB).
HEAVY = ("_hashlib", "nbstage.actors.common.output_bounds", "nbstage.protocol.daemon.replies")


def test_the_mcp_edge_starts_without_hashlib_or_the_daemons_replies() -> None:
    edge = "import nbstage.entrypoints.mcp.mcp_edge, nbstage.actors.proxy.supervisor"
    assert loaded_after(edge, HEAVY) == []


def test_the_session_child_starts_without_hashlib() -> None:
    child = (
        "import nbstage.entrypoints.session.session_child, nbstage.actors.session.session_manager"
    )
    assert loaded_after(child, ("_hashlib",)) == []


def test_nbformat_comes_in_without_the_iri_grammar_and_an_iri_check_still_works() -> None:
    """The daemon's first notebook read no longer waits for rfc3987_syntax's Lark grammar;
    jsonschema's ``iri`` check, the one user of it, imports it when first called."""
    out = run_python(
        """
        import importlib.util, sys
        from nbstage.entrypoints.common.lean import jsonschema_without_iri_grammar

        jsonschema_without_iri_grammar()
        import nbformat

        print("grammar loaded" if "rfc3987_syntax" in sys.modules else "grammar deferred")
        if importlib.util.find_spec("rfc3987_syntax") is not None:
            from jsonschema import Draft7Validator, FormatChecker

            check = Draft7Validator({"format": "iri"}, format_checker=FormatChecker())
            print(check.is_valid("https://example.org/é"), check.is_valid("::no scheme"))
        else:
            print(True, False)
        """
    )
    assert out.split() == ["grammar", "deferred", "True", "False"]
