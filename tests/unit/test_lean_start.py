"""`nbstage mcp` and its session child start lean (entrypoints/common/lean.py) and still behave
as with all of thespian's imports."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path


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


# Never in a per-client process: the command line's click (about 0.1 s of CPU a start), what
# only the Lab or the daemon use (JupyterLab's server, the shared document, nbformat and
# jsonschema), and tempfile with the shutil, bz2 and lzma it brings.
ELSEWHERE = (
    "click",
    "jupyter_server",
    "jupyterlab",
    "pycrdt",
    "jupyter_ydoc",
    "nbformat",
    "jsonschema",
    "tempfile",
    "shutil",
)

# In a per-client process only once it is used: tomllib for a state dir's config.toml,
# which most state dirs do not have (its regular expressions are compiled at import).
WHEN_USED = ("tomllib",)


def test_the_mcp_edge_starts_without_hashlib_or_the_daemons_replies() -> None:
    edge = "import nbstage.entrypoints.mcp.mcp_edge, nbstage.actors.proxy.supervisor"
    assert loaded_after(edge, HEAVY + ELSEWHERE + WHEN_USED) == []


def test_nbstage_mcp_reads_its_command_line_and_gets_ready_without_click() -> None:
    """`nbstage mcp` (cli.py) up to the edge's start: the command line, the state dir made and
    the daemon looked for (none answers here, and autostart is off). The state dir's path is
    short, so its sockets stay in it (statedir.py)."""
    with tempfile.TemporaryDirectory(prefix="nbs-") as short:
        out = ready_without_the_edge(Path(short) / "state")
    assert out.split() == ["True", "None"]


def ready_without_the_edge(state: Path) -> str:
    return run_python(
        f"""
        import sys

        sys.argv = ["nbstage", "mcp", "--no-autostart", "--state-dir", {str(state)!r}]
        from nbstage.entrypoints.mcp import mcp_main

        mcp_main.run_edge = lambda paths, args, *_: print(paths.logs.is_dir(), args.label)
        import nbstage.entrypoints.cli as cli

        cli.main()
        print(*sorted(name for name in {ELSEWHERE + HEAVY + WHEN_USED!r} if name in sys.modules))
        """
    )


# The daemon's own messages: a client of the daemon reads its replies, whose kernel facts
# live apart (protocol/daemon_actors/kernel_facts.py).
DAEMON_ONLY = ("nbstage.protocol.daemon_actors.kernels", "nbstage.protocol.common.settings")


def test_the_session_child_starts_without_hashlib() -> None:
    child = (
        "import nbstage.entrypoints.session.session_child, nbstage.actors.session.session_manager"
    )
    assert loaded_after(child, ("_hashlib", *ELSEWHERE, *WHEN_USED, *DAEMON_ONLY)) == []


def test_nbformat_comes_in_without_the_iri_grammar_and_still_validates() -> None:
    """The daemon's first notebook read no longer waits for rfc3987_syntax's Lark grammars;
    notebooks validate as before, and jsonschema's ``iri`` check, the one user of that
    module, imports it when first called."""
    out = run_python(
        """
        import importlib.util, sys
        from nbstage.actors.daemon.notebook import notebook_files

        notebook_files.warm_imports()
        import nbformat

        print("grammar loaded" if "rfc3987_syntax" in sys.modules else "grammar deferred")
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1+1")])
        nbformat.validate(notebook)
        notebook.cells[0]["source"] = 3
        try:
            nbformat.validate(notebook)
        except nbformat.ValidationError:
            print("refused")
        if importlib.util.find_spec("rfc3987_syntax") is not None:
            from jsonschema import Draft7Validator, FormatChecker

            check = Draft7Validator({"format": "iri"}, format_checker=FormatChecker())
            print(check.is_valid("https://example.org/é"), check.is_valid("::no scheme"))
        else:
            print(True, False)
        """
    )
    assert out.split() == ["grammar", "deferred", "refused", "True", "False"]


def test_the_daemon_launches_its_spare_and_listens_before_it_imports_jsonschema() -> None:
    """jsonschema (for nbformat) comes in on the daemon's warm-up worker, after it listens:
    neither the spare kernel's launch nor the daemon's start waits for it. The daemon runs
    its real start here, with the spare's launch and the edge's run stood in for."""
    with tempfile.TemporaryDirectory(prefix="nbs-") as short:
        out = run_python(
            f"""
            import os, sys
            from nbstage.actors.daemon.kernel import spare_kernel
            from nbstage.entrypoints.common.statedir import state_paths
            from nbstage.entrypoints.control import daemon_control
            from nbstage.entrypoints.daemon import daemon_edge

            def loaded(when):
                names = [n for n in ("jsonschema", "nbformat") if n in sys.modules]
                print(when, *names, sep=":")

            async def serve(edge):
                loaded("listening")

            spare_kernel.warm = lambda *args: loaded("spare")
            daemon_edge.Edge.run = serve
            os.environ["NBSTAGE_WARM_KERNEL"] = "1"
            daemon_control.run_foreground(state_paths({str(Path(short) / "state")!r}))
            """
        )
    assert out.split() == ["spare", "listening"]


def test_two_threads_bringing_jsonschema_in_at_once_both_get_it_whole() -> None:
    """Rooms open notebooks on several workers at once. A second thread asks while the
    first has put the grammar module's stand-in in place and is about to import
    jsonschema (held there until the second has had half a second to go wrong): it does
    not look for the grammar module while the stand-in is in sys.modules (importlib
    refuses that: its ``__spec__`` is None), and gets jsonschema whole."""
    out = run_python(
        """
        import importlib.abc, sys, threading
        from nbstage.entrypoints.common.lean import jsonschema_without_iri_grammar

        inside, second_done = threading.Event(), threading.Event()
        outcome = {}

        class HoldInsideTheImport(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "jsonschema" and not inside.is_set():
                    inside.set()
                    second_done.wait(0.5)
                return None

        def second():
            inside.wait()
            try:
                jsonschema_without_iri_grammar()
                import jsonschema

                outcome["second"] = hasattr(jsonschema, "Draft7Validator")
            except Exception as exc:
                outcome["second"] = repr(exc)
            second_done.set()

        sys.meta_path.insert(0, HoldInsideTheImport())
        waiting = threading.Thread(target=second)
        waiting.start()
        jsonschema_without_iri_grammar()
        waiting.join()
        print(inside.is_set(), outcome["second"], "rfc3987_syntax" in sys.modules)
        """
    )
    assert out.split() == ["True", "True", "False"]
