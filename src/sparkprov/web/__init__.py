"""``sparkprov ui``: a web page over a store (captures, plans, rows, traces).

The server answers from the store's files in its own process, with the embedded engine
(``query/embedded.py``), and starts no Spark; the page's assets are vendored in
``static/`` (built from ``web/src`` in the repository; installing needs no Node).

>>> from sparkprov.web.server import UiServer  # doctest: +SKIP
>>> UiServer(".sparkprov").serve()  # doctest: +SKIP
"""

from functools import partial

from ..api import front_ends


def _serve(session, port: int = 0, host: str = "127.0.0.1", open: bool = False):
    from .server import UiServer

    server = UiServer(str(session.store.root), host=host, port=port, session=session).start()
    print(f"sparkprov ui: serving store {session.store.root}\n  {server.url}", flush=True)
    if open:
        import webbrowser

        webbrowser.open(server.url)
    return server


front_ends.register("web", lambda session: partial(_serve, session))
