"""The public Python surface: ``LineageSession`` (``session``), ``Capture`` and ``Source``
(``capture``), ``LineageCursor`` (``cursor``).

>>> from sparkprov.api import Capture, LineageSession
>>> LineageSession.capture.__qualname__
'LineageSession.capture'
"""

from .capture import Capture, Source
from .cursor import LineageCursor, Point
from .session import DEFAULT_STORE, LineageSession

__all__ = ["DEFAULT_STORE", "Capture", "LineageCursor", "LineageSession", "Point", "Source"]
