"""The console's views of the rooms: the list, one room in detail, their peers, their
kernels and the actor tree that holds them."""

from __future__ import annotations

import textwrap
from datetime import datetime

from nbstage.entrypoints.admin.daemon_access import Admin, Outcome
from nbstage.entrypoints.admin.text_layout import (
    GAP,
    Column,
    clip,
    key_values,
    pid_text,
    short_id,
    table,
    where,
)
from nbstage.protocol.daemon.replies import (
    ActorTree,
    KeepAlive,
    KeptRoom,
    RoomDescribed,
    RoomsListed,
)
from nbstage.protocol.daemon.requests import DescribeRoom, GetActorTree, ListRooms
from nbstage.protocol.daemon.room_replies import SharedDocState
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, KernelState


def run_rooms(admin: Admin, args: list[str]) -> Outcome:
    answer = admin.call(ListRooms(), RoomsListed)
    columns = [
        Column("ID"),
        Column("PATH", keep="tail", min_width=12),
        Column("PEERS", keep="head", min_width=5),
        Column("KERNEL", keep="head", min_width=6),
        Column("KPID", right=True),
        Column("ROOM PID", right=True),
    ]
    rows = [
        [
            short_id(room.notebook_id),
            where(room.path, room.ephemeral),
            ",".join(peer.label for peer in room.peers or []) or "-",
            "room starting" if room.starting else room.kernel_status.value,
            pid_text(room.kernel_pid),
            pid_text(room.room_pid),
        ]
        for room in answer.rooms
    ]
    return Outcome.listing(answer, columns, rows, admin.width, "No rooms are resident.")


def run_room(admin: Admin, args: list[str]) -> Outcome:
    notebook_id = admin.resolve(args[0]).notebook_id
    room = admin.call(DescribeRoom(notebook_id), RoomDescribed)
    kernel = room.kernel_status.value
    if room.kernel_pid is not None:
        kernel += f", pid {room.kernel_pid}"
    if room.kernel_actor_pid is not None:
        kernel += f" (actor pid {room.kernel_actor_pid})"
    attached = "kernel attached" if room.latch.kernel_attached else "no kernel attached"
    executions = room.executions
    pairs = [
        ("notebook", room.notebook_id, "head"),
        ("path", where(room.path, room.ephemeral), "tail"),
        ("runtime", room.runtime or "none (no kernel)", "head"),
        ("cells", f"{room.cell_count}, {'unsaved changes' if room.unsaved else 'saved'}", "head"),
        ("room pid", pid_text(room.room_pid), "head"),
        ("kernel", kernel, "head"),
        ("executions", f"{len(executions.live)} live, {executions.finished} finished", "head"),
        ("latch", f"{attached}, generation {room.latch.generation}", "head"),
        ("keep-alive", keep_alive_text(room.keep_alive), "head"),
    ]
    shared = room.shared_doc
    if shared is not None and shared.state != SharedDocState.NONE:
        kept = f", {shared.frozen_bytes / 1024:.0f} kB" if shared.frozen_bytes else ""
        pairs.append(("shared doc", f"{shared.state}{kept}", "head"))
    pairs += peer_pairs(room)
    pairs += [("  live", execution_id, "head") for execution_id in executions.live]
    if room.environment is not None:
        at = [k for k, _, _ in pairs].index("kernel") + 1
        pairs[at:at] = [("environment", environment_text(room.environment), "tail")]
    if room.kept is not None:
        key = "save failed"
        key_width = max(len(key), *(len(k) for k, _, _ in pairs))
        room_width = max(admin.width - key_width - len(GAP), 8)
        lines = textwrap.wrap(kept_text(room.kept), room_width, break_on_hyphens=False)
        after = [k for k, _, _ in pairs].index("cells") + 1
        pairs[after:after] = [(key if i == 0 else "", line, "head") for i, line in enumerate(lines)]
    return Outcome.of(room, key_values(pairs, admin.width))


def peer_pairs(room: RoomDescribed) -> list[tuple[str, str, str]]:
    """The agents, then the people watching in JupyterLab, one line each."""
    people = [peer for peer in room.peers if peer.kind == "person"]
    agents = [peer for peer in room.peers if peer.kind != "person"]
    pairs = []
    for title, peers in (("agents", agents), ("people", people)):
        pairs.append((title, str(len(peers)) if peers else "none", "head"))
        pairs += [(f"  {peer.peer_id}", peer.label, "head") for peer in peers]
    return pairs


def keep_alive_text(keep: KeepAlive) -> str:
    if keep.pending:
        return f"{keep.secs:g}s, teardown pending (generation {keep.armed_generation})"
    if keep.armed_generation is not None:
        return f"{keep.secs:g}s, armed for generation {keep.armed_generation}"
    return f"{keep.secs:g}s, not armed"


def environment_text(env: EnvironmentView) -> str:
    detail = env.fingerprint or env.project or env.path or env.host
    return f"{env.source}{', ' + detail if detail else ''}"


def kept_text(kept: KeptRoom) -> str:
    """Why the reaper left a room resident, in a sentence or two."""
    stamp = datetime.fromtimestamp(kept.at).strftime("%H:%M:%S")
    return (
        f"at {stamp}, closing ({kept.reason}): {kept.problem} The room was kept with "
        "its unsaved edits; the reaper tries again at its next sweep."
    )


def run_peers(admin: Admin, args: list[str]) -> Outcome:
    peers = [
        {
            "notebook_id": room.notebook_id,
            "path": room.path,
            "ephemeral": room.ephemeral,
            "peer_id": peer.peer_id,
            "label": peer.label,
        }
        for room in admin.rooms()
        for peer in room.peers or []
    ]
    if not peers:
        return Outcome({"peers": peers}, "No peers are connected.")
    columns = [
        Column("ROOM"),
        Column("PEER ID"),
        Column("LABEL", keep="head", min_width=8),
        Column("PATH", keep="tail", min_width=12),
    ]
    rows = [
        [short_id(p["notebook_id"]), p["peer_id"], p["label"], where(p["path"], p["ephemeral"])]
        for p in peers
    ]
    return Outcome({"peers": peers}, table(columns, rows, admin.width))


def run_kernels(admin: Admin, args: list[str]) -> Outcome:
    rooms = admin.rooms()
    actors = {
        room.notebook_id: room.kernel.actor_pid if room.kernel else None
        for room in admin.call(GetActorTree(), ActorTree).rooms
    }
    kernels = [
        {
            "notebook_id": room.notebook_id,
            "path": room.path,
            "ephemeral": room.ephemeral,
            "kernel_status": room.kernel_status.value,
            "kernel_pid": room.kernel_pid,
            "kernel_host": room.environment.host if room.environment else None,
            "actor_pid": actors.get(room.notebook_id),
            "room_pid": room.room_pid,
        }
        for room in rooms
        if room.kernel_status is not KernelState.NONE
    ]
    if not kernels:
        return Outcome({"kernels": kernels}, "No kernels are running.")
    columns = [
        Column("ROOM"),
        Column("STATUS", keep="head"),
        Column("KERNEL PID", right=True),
        Column("ACTOR PID", right=True),
        Column("ROOM PID", right=True),
        Column("PATH", keep="tail", min_width=12),
    ]
    rows = [
        [
            short_id(k["notebook_id"]),
            k["kernel_status"],
            f"on {k['kernel_host']}" if k["kernel_host"] else pid_text(k["kernel_pid"]),
            pid_text(k["actor_pid"]),
            pid_text(k["room_pid"]),
            where(k["path"], k["ephemeral"]),
        ]
        for k in kernels
    ]
    return Outcome({"kernels": kernels}, table(columns, rows, admin.width))


def run_tree(admin: Admin, args: list[str]) -> Outcome:
    tree = admin.call(GetActorTree(), ActorTree)
    width = admin.width

    def node(prefix: str, label: str, address: str | None) -> str:
        if address is None:
            return clip(prefix + label, width)
        room = width - len(prefix) - len(label) - len(GAP)
        return f"{prefix}{label}{GAP}{clip(address, max(room, 12), 'tail')}"

    lines = [node("", f"Daemon pid {tree.pid}", tree.address)]
    for index, room in enumerate(tree.rooms):
        last = index == len(tree.rooms) - 1
        label = f"Room {short_id(room.notebook_id)} pid {pid_text(room.pid)}"
        lines.append(node("`- " if last else "|- ", label, room.address))
        if room.kernel is not None:
            label = (
                f"Kernel actor pid {pid_text(room.kernel.actor_pid)}, "
                f"kernel pid {pid_text(room.kernel.kernel_pid)}"
            )
            lines.append(node("   `- " if last else "|  `- ", label, None))
    if not tree.rooms:
        lines.append("   (no rooms)")
    return Outcome.of(tree, "\n".join(lines))
