"""Writes docs/tools.md and docs/settings.md from the code that defines them, so the
reference a user reads is the one nbstage runs: ``make docs`` (a test fails when they
differ)."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

from nbstage.actors.daemon.environment.environments import ENVS_DIR_ENV, TEMPLATE_DIR_ENV
from nbstage.entrypoints.common.statedir import STATE_DIR_ENV
from nbstage.entrypoints.control.daemon_control import VERSION_ENV
from nbstage.protocol.common import kernel_hosts as hosts_module
from nbstage.protocol.common import settings as settings_module
from nbstage.protocol.mcp.tools import TOOLS

DOCS = Path(__file__).resolve().parent

TOOLS_INTRO = """# Tools

Every tool `nbstage mcp` lists, as `protocol/mcp/tools.py` declares it. Most work on the
session's active notebook (`connect_notebook` or `create_notebook` makes one active);
each takes a JSON object of the arguments named here, and `tools/list` gives their full
schemas. This file is written by `make docs`.

| tool | what it does | arguments |
|---|---|---|
"""

SETTINGS_INTRO = """# Settings

The daemon reads `config.toml` in its state dir (a TOML table of the names below), and
an environment variable overrides each one. A name it does not know, a value of the
wrong type, a file that is not TOML or a malformed `[[kernel_hosts]]` table is refused
at start, before anything runs: `nbstage daemon start` prints what is wrong and where and
exits 78, and an agent whose `nbstage mcp` autostarts the daemon gets the same words as
its call's error at once (`tests/e2e/test_bad_settings.py`).
This file is written by `make docs` from `protocol/common/settings.py`.

| setting | variable | default | what it does |
|---|---|---|---|
"""

OTHER_VARIABLES = (
    (
        STATE_DIR_ENV,
        "the state dir every command uses (as `--state-dir`; default "
        "`$XDG_STATE_HOME/nbstage`, else `~/.local/state/nbstage`)",
    ),
    (
        TEMPLATE_DIR_ENV,
        "where the kernels' template venv lives (default `$XDG_CACHE_HOME/nbstage`, "
        "else `~/.cache/nbstage`)",
    ),
    (
        ENVS_DIR_ENV,
        "where inline dependency environments are cached (default `<state dir>/envs`)",
    ),
    (VERSION_ENV, "the version a daemon reports, to try the upgrade handoff"),
)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def tools_md() -> str:
    rows = []
    for spec in TOOLS:
        args = ", ".join(f"`{f.name}`" for f in dataclasses.fields(spec.args)) or "none"
        rows.append(f"| `{spec.name}` | {_cell(spec.description)} | {args} |\n")
    return TOOLS_INTRO + "".join(rows)


KERNEL_HOSTS_INTRO = """
## Kernel hosts

Kernels may run behind a Jupyter Kernel Gateway (docs/adr/0007-kernel-hosts.md). Each
gateway is a `[[kernel_hosts]]` table in `config.toml` (no variable sets them); a malformed
table is refused at start with a message that names it. A notebook asks for one with
`"kernel_host": "NAME"` in its `nbstage` metadata, or for any of them with
`"kernel_host": "*"` (`create_notebook(kernel_host=…)` writes either); one that asks for
none runs its kernel on the daemon's machine.

```toml
[[kernel_hosts]]
name = "big"
url = "https://big.example:8888"
token_file = "big.token"   # or token = "…"; relative paths are read from the state dir
ca_file = "test-ca.pem"    # optional: the CAs of an https gateway
max_kernels = 16           # optional
silence_secs = 4           # optional: quiet this long, the host is lost for a kernel
```

| key | what it is |
|---|---|
"""

KERNEL_HOSTS_WATCH = """
The daemon asks each host `GET /api` every `kernel_host_check_secs` (each ask bounded by
2 s); two failures in a row make the host lost, and it is asked again 10 s later. A lost
host, or one at `max_kernels`, takes no new kernel: a notebook that asks for it runs on the
healthy host with room and the fewest kernels. The daemon grants every kernel its host
itself, one at a time, so notebooks that start at the same moment spread and a host never
runs more than its `max_kernels` of the daemon's kernels. A kernel that died on a host goes
back there at its restart only if the host still answers; otherwise the restart runs it
elsewhere and says it moved. `nbstage admin hosts` shows each host's health.
Between checks, each kernel's channels ping the host every second; when they hear nothing
for `silence_secs` (4 s unless the table says otherwise), the host is taken for lost
there and the kernel is reported dead (`kernel_died`, with the host's name). Raise it for
a host that is far away or often busy; lower, a frozen host is told sooner.
"""


def _field_docs(module: object = settings_module, name: str = "Settings") -> dict[str, str]:
    tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[attr-defined]
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    docs: dict[str, str] = {}
    for field, after in zip(cls.body, [*cls.body[1:], None], strict=True):
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name):
            said = ""
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                said = str(after.value.value)
            docs[field.target.id] = said
    return docs


def settings_md() -> str:
    defaults = settings_module.Settings()
    rows = []
    for name, said in _field_docs().items():
        if name not in settings_module.VARIABLE_SETTINGS:
            continue
        default = getattr(defaults, name)
        shown = f"`{default!r}`" if default != "" else "(none)"
        env = settings_module.env_name(name)
        rows.append(f"| `{name}` | `{env}` | {shown} | {_cell(said.replace('``', '`'))} |\n")
    others = "".join(f"| `{name}` | {said} |\n" for name, said in OTHER_VARIABLES)
    host_docs = _field_docs(hosts_module, "KernelHost").items()
    hosts = "".join(f"| `{n}` | {_cell(said.replace('``', '`'))} |\n" for n, said in host_docs)
    return (
        SETTINGS_INTRO
        + "".join(rows)
        + "\n## Other variables\n\n| variable | what it does |\n|---|---|\n"
        + others
        + "\nOthers that start with `NBSTAGE_` are set by nbstage for its own processes.\n"
        + KERNEL_HOSTS_INTRO
        + hosts
        + KERNEL_HOSTS_WATCH
    )


PAGES = {"tools.md": tools_md, "settings.md": settings_md}


def main() -> int:
    for name, page in PAGES.items():
        (DOCS / name).write_text(page())
    return 0


if __name__ == "__main__":
    sys.exit(main())
