"""The notebook a Room owns, in the daemon: the document, its files, the merge with the
disk, the journal and the save rules. Pure or worker-thread code; no actor."""
