"""Conversations inside the daemon process: its socket edge and the Daemon, Room and
Kernel actors, and the timers each leaves for itself."""
