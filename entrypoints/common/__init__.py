"""What every nbstage process's edge shares: the actor host on asyncio, logs, parent-death
guards, worker threads, the state dir and its sockets."""
