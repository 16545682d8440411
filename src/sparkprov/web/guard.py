"""Who may use the page: the checks every request passes before the app sees it.

- The Host header must name the address the server was started on (a page of another
  site whose name was rebound to 127.0.0.1 sends its own name: DNS rebinding).
- A token, printed at start as Jupyter prints its own, must come with every request:
  the address printed carries it once (``?token=``), the guard then keeps it in a
  cookie only this site's pages send (HttpOnly, SameSite=Strict) and takes the token
  out of the address.
- A request that is not GET must send JSON, and its Origin, when the browser sends
  one, must be this server: a form on another site can do neither.
- Every answer forbids scripts and styles from anywhere but this server (a
  Content-Security-Policy), so even a value that slipped into the page as markup
  could run nothing.

>>> sorted(allowed_hosts("127.0.0.1", 8765))
['127.0.0.1:8765', '[::1]:8765', 'localhost:8765']
>>> allowed_hosts("0.0.0.0", 8765) is None
True
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "sparkprov_token"  # and the port: cookies are not kept apart by port
HEADER = "x-sparkprov-token"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_ANY = {"0.0.0.0", "::", ""}
HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # the token never leaves in a Referer
    "cache-control": "no-store",
}


def cookie_name(port: int) -> str:
    """The token's cookie for the server on ``port``: two servers of one machine (two
    stores) each keep their own.

    >>> cookie_name(8765)
    'sparkprov_token_8765'
    """
    return f"{COOKIE}_{port}"


def new_token() -> str:
    """A token as hard to guess as Jupyter's (48 hex digits)."""
    return secrets.token_hex(24)


def allowed_hosts(host: str, port: int) -> set[str] | None:
    """The Host headers a server bound to ``host``:``port`` answers; None for a
    wildcard address (every name of the machine reaches it: the token guards it)."""
    if host in _ANY:
        return None
    names = _LOOPBACK if host in _LOOPBACK else {host}
    return {f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names}


class Guard:
    """ASGI middleware refusing what the module's docstring lists."""

    def __init__(self, app: ASGIApp, token: str, hosts: set[str] | None, port: int) -> None:
        self.app, self.token, self.hosts = app, token, hosts
        self.cookie = cookie_name(port)

    def _matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = self._refusal(request)
        send = _with_headers(send)
        if refused is None:
            await self.app(scope, receive, send)
        else:
            await refused(scope, receive, send)

    def _refusal(self, request: Request) -> Response | None:
        host = request.headers.get("host", "").lower()
        if self.hosts is not None and host not in self.hosts:
            return PlainTextResponse(f"sparkprov ui does not answer for host {host!r}", 400)
        given = request.query_params.get("token")
        if given is not None and request.method == "GET":
            if not self._matches(given):
                return PlainTextResponse("wrong token: open the address `sparkprov ui` printed", 403)
            url = request.url.remove_query_params("token")
            response = RedirectResponse(url.path + (f"?{url.query}" if url.query else ""), 303)
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict")
            return response
        if not (self._matches(request.headers.get(HEADER)) or self._matches(request.cookies.get(self.cookie))):
            return PlainTextResponse("no token: open the address `sparkprov ui` printed (it carries the token)", 403)
        if request.method not in ("GET", "HEAD"):
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                return PlainTextResponse("requests that are not GET send JSON", 415)
            origin = request.headers.get("origin")
            if origin is not None and origin.lower() != f"{request.url.scheme}://{host}":
                return PlainTextResponse(f"requests from {origin!r} are refused", 403)
        return None


class _with_headers:
    """``send`` adding the security headers to the response's start."""

    def __init__(self, send: Send) -> None:
        self.send = send

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in HEADERS]
            headers += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
            message = {**message, "headers": headers}
        await self.send(message)
