"""``sparkprov ui``: a web page over a store (captures, plans, rows, traces).

The server answers from the store's files in its own process, with the embedded engine
(``query/embedded.py``), and starts no Spark; the page's assets are vendored in
``static/`` (built from ``web/src`` in the repository; installing needs no Node).

>>> from sparkprov.web.server import UiServer  # doctest: +SKIP
>>> UiServer(".sparkprov").serve()  # doctest: +SKIP
"""
