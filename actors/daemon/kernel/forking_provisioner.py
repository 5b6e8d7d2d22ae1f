"""jupyter_client's local provisioner, launching a pool kernel through the zygote.

Only the launch differs: the kernel is forked by the zygote of the pool's interpreter
(``fork_server.py``) instead of started by ``Popen``, and the provisioner holds the
``ForkedKernel`` where it would hold the ``Popen``. Interrupt, kill, restart and the
wait for the end are the local provisioner's own: they signal the kernel's process group
(the kernel leads its session before the zygote answers) or the kernel through its pidfd.
A zygote that cannot fork leaves the launch to the local provisioner, as before.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning.local_provisioner import LocalProvisioner

from nbstage.actors.daemon.kernel.fork_server import FORK_SERVERS, ZygoteUnavailable

log = logging.getLogger("nbstage.kernel")


class ForkingProvisioner(LocalProvisioner):  # type: ignore[misc]
    zygote_python: Path | None = None
    """The interpreter of the zygote that forks this kernel (the pool's template)."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        if self.zygote_python is None:
            return await super().launch_kernel(cmd, **kwargs)
        env = kwargs.get("env")
        cwd = kwargs.get("cwd")
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
