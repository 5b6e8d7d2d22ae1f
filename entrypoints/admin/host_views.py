"""The console's view of the kernel hosts (issue 26): each host's health as the daemon's
watch sees it, its kernels against its limit, and why it last failed to answer."""

from __future__ import annotations

from nbstage.entrypoints.admin.daemon_access import Admin, Outcome
from nbstage.entrypoints.admin.text_layout import Column
from nbstage.protocol.daemon.replies import HostsListed
from nbstage.protocol.daemon.requests import ListHosts


def run_hosts(admin: Admin, args: list[str]) -> Outcome:
    answer = admin.call(ListHosts(), HostsListed)
    columns = [
        Column("HOST", keep="head", min_width=6),
        Column("URL", keep="tail", min_width=12),
        Column("HEALTH", keep="head"),
        Column("KERNELS", right=True),
        Column("LAST ERROR", keep="head", min_width=12),
    ]
    rows = [
        [
            host.name,
            host.url,
            host.health,
            f"{host.kernels}/{host.max_kernels if host.max_kernels is not None else '-'}",
            host.last_error or "-",
        ]
        for host in answer.hosts
    ]
    return Outcome.listing(
        answer,
        columns,
        rows,
        admin.width,
        "No kernel hosts: config.toml names none; kernels run here.",
    )
