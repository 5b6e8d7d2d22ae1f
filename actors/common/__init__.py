"""What every process's actors share: the actor base with its one dispatch table, the
thespian internals nbstage relies on, and the output bounds every side applies."""
