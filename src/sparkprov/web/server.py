"""``sparkprov ui``'s server: the application on uvicorn, in the foreground or in a thread.

>>> import tempfile
>>> from sparkprov.store.catalog import Store
>>> with UiServer(str(Store(tempfile.mkdtemp()).root), port=0) as ui:
...     ui.url.startswith("http://127.0.0.1:") and "?token=" in ui.url
True
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

from ..errors import SparkprovError
from .app import make_app
from .guard import new_token

DEFAULT_PORT = 8765


class UiServer:
    """The page for ``store`` served on ``host``:``port`` (0: a free port), to whoever
    opens :attr:`url` (which carries the token); with ``session`` (the LineageSession
    that made captures), what-if replays them."""

    def __init__(
        self, store: str, host: str = "127.0.0.1", port: int = DEFAULT_PORT, token: str | None = None, session=None
    ):
        import uvicorn

        self.token = token or new_token()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # inherited by the connections accepted: a response's head and body go out at
        # once, not the body 40 ms later, after the client's delayed ACK of the head
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self._socket.bind((host, port))
            self._socket.listen(128)  # a browser opening the printed address waits for uvicorn, not refused
        except OSError as exc:
            self._socket.close()
            raise SparkprovError(f"sparkprov ui cannot listen on {host}:{port}: {exc.strerror}") from None
        self.host, self.port = host, self._socket.getsockname()[1]
        app = make_app(store, self.token, host, self.port, session=session)
        self.jobs = app.state.jobs  # the long work started from the page
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        name = self.host if self.host not in ("0.0.0.0", "::", "") else socket.gethostname()
        name = f"[{name}]" if ":" in name else name
        return f"http://{name}:{self.port}/?token={self.token}"

    def serve(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        self._server.run(sockets=[self._socket])

    def start(self) -> UiServer:
        """Serve in a background thread; returns once the server accepts requests."""
        self._thread = threading.Thread(target=self.serve, name="sparkprov-ui", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise SparkprovError("sparkprov ui's server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> UiServer:
        return self.start()

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
