"""`python -m nbstage.entrypoints.session.session_main`: how `nbstage mcp` starts its session
child (``session_child.py``), lean from the first import (``lean.py``)."""

from __future__ import annotations


def run() -> None:
    from nbstage.entrypoints.common.lean import thespian_without_extras, without_tls

    without_tls()
    thespian_without_extras()
    from nbstage.entrypoints.session.session_child import main

    main()


if __name__ == "__main__":
    run()
