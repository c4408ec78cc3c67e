"""Where the time goes: runtime counters of a node, and their outlets.

`counters` keeps them (a row per process in the dataset's shared memory, summed on read);
`report` writes them out (JSON lines, a log line, Prometheus text). See `docs/metrics.md`.
"""

from streaming.metrics.counters import COLUMNS, SCHEMES, Counters, snapshot

__all__ = ["COLUMNS", "SCHEMES", "Counters", "snapshot"]
