"""The Daemon's answers about its rooms (list, status, the actor tree), read off the
directory; nothing here changes it."""

from __future__ import annotations

from nbstage.actors.daemon.room_directory import RoomDirectory, RoomEntry
from nbstage.protocol.daemon.replies import (
    ActorRole,
    ActorTree,
    KernelNode,
    PeerView,
    RoomCounts,
    RoomNode,
    RoomsListed,
    RoomView,
)
from nbstage.protocol.daemon_actors.kernel_facts import KernelState


def room_view(notebook_id: str, entry: RoomEntry) -> RoomView:
    status = entry.status
    return RoomView(
        notebook_id,
        entry.path,
        entry.ephemeral,
        entry.starting,
        entry.pid,
        [PeerView(p, label) for p, label in status.peers] if status else [],
        status.kernel_status if status else KernelState.NONE,
        status.kernel_pid if status else None,
        status.kernelspec if status else None,
        status.environment if status else None,
    )


def rooms_listed(directory: RoomDirectory) -> RoomsListed:
    return RoomsListed([room_view(nid, entry) for nid, entry in directory.items()])


def room_counts(directory: RoomDirectory) -> RoomCounts:
    kernels = sum(1 for _, entry in directory.items() if entry.kernel_running)
    return RoomCounts(len(directory), kernels)


def actor_tree(directory: RoomDirectory, address: str, pid: int) -> ActorTree:
    rooms = []
    for notebook_id, entry in directory.items():
        status = entry.status
        kernel = None
        if status is not None and status.kernel_actor_pid is not None:
            kernel = KernelNode(status.kernel_actor_pid, status.kernel_pid)
        room = RoomNode(ActorRole.ROOM, notebook_id, str(entry.address), entry.pid, kernel)
        rooms.append(room)
    return ActorTree(ActorRole.DAEMON, address, pid, rooms)
