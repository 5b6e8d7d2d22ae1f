"""The Kernel actor and everything about one kernel process in the daemon: the
jupyter_client seam, the launcher, kernelspecs, the warm spare and the process tree."""
