"""jupyter_client's local provisioner, launching a pool kernel through the zygote.

Only the launch differs: the kernel is forked by the zygote of the pool's interpreter
(``fork_server.py``) instead of started by ``Popen``, and the provisioner holds the
``ForkedKernel`` where it would hold the ``Popen``. Interrupt, kill, restart and the
wait for the end are the local provisioner's own: they signal the kernel's process group
(the kernel leads its session before the zygote answers) or the kernel through its pidfd.
A zygote that cannot fork leaves the launch to the local provisioner, as before, and so
does a pool environment that has packages of its own (a ``%pip install`` before a
restart): the zygote has the template's ipykernel, IPython and their dependencies
imported already, and a kernel must import the versions its environment installed.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning.local_provisioner import LocalProvisioner

from nbstage.actors.daemon.environment.environments import TEMPLATE_LINK
from nbstage.actors.daemon.kernel.fork_server import FORK_SERVERS, ZygoteUnavailable
from nbstage.actors.daemon.kernel.kernel_zygote import site_packages, venv_of

log = logging.getLogger("nbstage.kernel")


class ForkingProvisioner(LocalProvisioner):  # type: ignore[misc]
    zygote_python: Path | None = None
    """The interpreter of the zygote that forks this kernel (the pool's template)."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        cwd = kwargs.get("cwd")
        plain = self.zygote_python is None or has_packages_of_its_own(cmd[0])
        if plain or (cwd is not None and not os.path.isdir(cwd)):
            return await super().launch_kernel(cmd, **kwargs)
        env = kwargs.get("env")
        try:
            process = FORK_SERVERS.fork(
                self.zygote_python, cmd, dict(env if env is not None else os.environ), cwd
            )
        except ZygoteUnavailable as exc:
            log.warning("kernel %s starts without the zygote: %s", self.kernel_id, exc)
            return await super().launch_kernel(cmd, **kwargs)
        self.process = process
        self.pid = self.pgid = process.pid
        self.cwd = cwd or Path.cwd()
        return self.connection_info


def has_packages_of_its_own(python: str) -> bool:
    """Whether the environment of ``python`` holds anything besides its link to the
    template (what ``environments.take_pool_env`` made)."""
    prefix = venv_of(python)
    if prefix is None:
        return True
    try:
        names = os.listdir(site_packages(prefix, sys.version_info[:2]))
    except OSError:
        return True
    return any(name != TEMPLATE_LINK for name in names)
