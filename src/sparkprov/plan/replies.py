"""Py4J's replies sent as soon as they are written.

Py4J's JVM side writes each reply through an 8 KB buffer and leaves Nagle's algorithm
on for its sockets: a reply longer than the buffer goes out in several writes, and
every write after the first waits until the one before is acknowledged, which Linux's
delayed acknowledgement can put off by 40 ms. The rows an observation gathered (an
observed side relation, ``plan/observed.py``) came back that late every time. Measured
on this machine (PySpark 4.3, the pickled row of an ``Observation`` gathering 100 rows,
17 KB): 48.6 ms a call, 3.8 ms with TCP_NODELAY; 481 rows (85 KB), 52.2 ms and 7.2 ms.

:func:`quick_replies` sets TCP_NODELAY on the JVM's end of every Py4J connection open
at the time (one per Python thread, in PySpark's pinned-thread mode); a capture asks for
it as it starts, so the connections of threads that joined since get it too. Where
it cannot be set (another Py4J, ``java.lang`` not opened to reflection) replies stay
as they were, slower, the same.

>>> from pyspark.sql import SparkSession
>>> quick_replies(SparkSession.builder.getOrCreate()) >= 1
True
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from .references import compiled
from .versions import line_of

_CLASS = "SparkprovSockets"


def quick_replies(spark: SparkSession) -> int:
    """Set TCP_NODELAY on the JVM's end of this process's Py4J connections; returns
    how many have it now (0 when it could not be set)."""
    helper = compiled(spark, _CLASS, line_of(spark).java_source(_CLASS))
    return int(helper.quickReplies()) if helper is not None else 0
