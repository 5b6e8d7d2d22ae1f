"""The typed messages nbstage's actors and processes exchange.

Importing the package first lets ``dataclasses`` reuse compiled methods
(``method_cache.py``), which halves the time a process takes to define its messages.
"""

from nbstage.protocol.common import method_cache

method_cache.install()
