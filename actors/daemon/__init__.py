"""Actors of the daemon process: the Daemon (registry, admission, reaper) and, in the
subpackages, each notebook's Room, each Kernel, the notebook model and the environments."""
