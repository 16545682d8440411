"""The page's web application (Starlette): the page itself, its assets and a JSON API.

Routes (all behind ``guard.Guard``):

- ``GET /``: the page (one HTML file; its views live in the address's fragment, so
  every view can be reloaded and shared);
- ``GET /static/...``: its script and style sheet, built and vendored in the package;
- ``GET /api/captures?like=&offset=&limit=``: the captures (newest version of each), a page;
- ``GET /api/captures/{name}?version=``: one capture version (plan, sources, columns);
- ``GET /api/captures/{name}/{version}/rows?where=&order=&desc=&offset=&limit=``;
- ``POST /api/captures/{name}/{version}/backward`` ``{"rids": [...]} or {"where": ...}``
  with ``source``, ``offset``, ``limit``; ``POST .../forward`` ``{"source", "rids"}``;
  ``POST .../provenance`` ``{"rids"}``: why and how, where the capture kept witnesses;
  ``GET .../violations?a=&b=``: output rows against the functional dependency a → b;
- ``POST .../replay`` ``{"drop": {source: [rids] or predicate}, "key": [columns]}``: what-if, as a
  job (with a session only); ``GET /api/jobs/{id}`` its progress and result,
  ``POST /api/jobs/{id}/cancel``;
- ``GET /api/session``: whether the page can capture (served by a session), and the
  session's tables; ``POST /api/capture`` ``{"name", "sql", "witnesses"}``: a query
  captured, as a job;
- ``GET /api/graph``: the store's lineage graph (its build's sizes, the captures made
  since); ``POST /api/graph/build``: a new build, as a job (with a session only);
- ``GET /api/linked?c=a&c=b[&x=col&x=col][&source=s][&m=avg(col)]``: captures as
  linked charts, measuring ``m`` (default ``count(*)``); ``POST /api/linked/brush``
  ``{"captures", "chart", "groups", "measure"}``: every chart's bars under the brush
  (``query/linked.py``).

Errors are JSON ``{"error": message, "kind": class}``, with the status saying whose
fault: 400 for what the page sent, 404 for a capture not in the store, 409 for a
source changed since its capture, 413 and 501 for an answer that needs Spark.

>>> import tempfile
>>> from starlette.testclient import TestClient
>>> from sparkprov.store.catalog import Store
>>> store = str(Store(tempfile.mkdtemp()).root)
>>> client = TestClient(make_app(store, token="t"), base_url="http://127.0.0.1:8765")
>>> client.get("/api/captures", headers={"x-sparkprov-token": "t"}).json()
{'total': 0, 'offset': 0, 'captures': []}
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import (
    CaptureNotFound,
    EmbeddedUnsupported,
    InvalidArgument,
    InvalidPredicate,
    LineageTooLarge,
    ReplayUnavailable,
    SessionRequired,
    SourceChanged,
    SparkprovError,
    StoreNotFound,
    WitnessesNotKept,
)
from ..graphs.graph import graph_status
from .capturing import analysed, capture_query, checked_request, session_tables
from .data import StoreView
from .guard import Guard, allowed_hosts
from .jobs import Jobs
from .whatif import check_drop, replay_without

STATIC = Path(__file__).parent / "static"
log = logging.getLogger("sparkprov")

_STATUS = [
    (InvalidArgument, 400),
    (InvalidPredicate, 400),
    (CaptureNotFound, 404),
    (StoreNotFound, 404),
    (WitnessesNotKept, 409),
    (ReplayUnavailable, 409),
    (SessionRequired, 409),
    (SourceChanged, 409),
    (LineageTooLarge, 413),
    (EmbeddedUnsupported, 501),
]


def _error(exc: SparkprovError) -> JSONResponse:
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
    return JSONResponse({"error": str(exc), "kind": type(exc).__name__}, status)


def _int(request: Request, name: str, default: int | None) -> int | None:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidArgument(f"{name} must be a whole number, not {text!r}") from None


async def _body(request: Request) -> dict:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        raise InvalidArgument("the request's body is not JSON") from None
    if not isinstance(body, dict):
        raise InvalidArgument("the request's body is a JSON object")
    return body


def _answering(fn: Callable[..., Any]) -> Callable[[Request], Any]:
    """An endpoint answering ``fn(request)``'s value as JSON, and sparkprov's errors as
    JSON with their status; the store's reads run in a worker thread."""
    from starlette.concurrency import run_in_threadpool

    async def endpoint(request: Request) -> JSONResponse:
        try:
            body = await _body(request) if request.method == "POST" else {}
            return JSONResponse(await run_in_threadpool(fn, request, body))
        except SparkprovError as exc:
            return _error(exc)
        except Exception as exc:  # a fault of sparkprov's: the page says what it was, the log the rest
            log.exception("sparkprov ui: %s %s failed", request.method, request.url.path)
            return JSONResponse({"error": f"{type(exc).__name__}: {exc}", "kind": "InternalError"}, 500)

    return endpoint


def make_app(store: str, token: str, host: str = "127.0.0.1", port: int = 8765, session=None) -> Starlette:
    """The application serving ``store`` to whoever has ``token``, on ``host``:``port``;
    with ``session`` (a LineageSession), replays of the captures it made."""
    view = StoreView(store)
    jobs = Jobs(session.spark if session is not None else None)

    def _capture_of_session(name: str, version: int):
        if session is None:
            raise ReplayUnavailable(
                "what-if replays the captured query, which only the session that made the capture holds: "
                "open the page from it with session.ui()"
            )
        capture = session.load(name, version)
        if not capture.replayable:
            raise ReplayUnavailable(f"capture {name!r} v{version} was not made by the session serving this page")
        return capture

    def captures(request: Request, _: dict) -> dict:
        q = request.query_params
        return view.captures(q.get("like"), offset=_int(request, "offset", 0), limit=_int(request, "limit", 100))

    def capture(request: Request, _: dict) -> dict:
        found = view.capture(request.path_params["name"], _int(request, "version", None))
        try:
            found["replayable"] = _capture_of_session(found["name"], found["version"]) is not None
        except SparkprovError:
            found["replayable"] = False
        return found

    def replay(request: Request, body: dict) -> dict:
        capture = _capture_of_session(request.path_params["name"], request.path_params["version"])
        drop = check_drop(body.get("drop"), capture.sources)
        key = body.get("key")
        job = jobs.start(f"replay {capture.name} v{capture.version}", lambda: replay_without(capture, drop, key))
        return jobs.progress(job.id)

    def session_info(_: Request, __: dict) -> dict:
        if session is None:
            return {"capturing": False, "tables": []}
        return {"capturing": True, "tables": session_tables(session)}

    def start_capture(_: Request, body: dict) -> dict:
        if session is None:
            raise SessionRequired(
                "a capture runs a query on Spark, which only a session holds: open the page from it with session.ui()"
            )
        name, sql, witnesses = checked_request(body, session.spark)
        df = analysed(session, sql)
        job = jobs.start(f"capture {name}", lambda: capture_query(session, df, name, witnesses))
        return jobs.progress(job.id)

    def graph(_: Request, __: dict) -> dict:
        return graph_status(view.store) | {"building": session is not None}

    def build_graph(_: Request, __: dict) -> dict:
        if session is None:
            raise SessionRequired(
                "a build runs on Spark, which only a session holds: open the page with session.ui(), "
                "or run sparkprov graph build"
            )
        graph = session.graph()

        def work() -> dict:
            meta = graph.build(progress=lambda text: log.info("sparkprov graph: %s", text))
            return {"nodes": meta["nodes"], "edges": meta["edges"], "components": meta["components"]}

        return jobs.progress(jobs.start("build the lineage graph", work).id)

    def job(request: Request, _: dict) -> dict:
        job_id = request.path_params["job"]
        found = jobs.progress(job_id)
        if found["state"] == "done":
            found["result"] = jobs.get(job_id).result
        return found

    def cancel(request: Request, _: dict) -> dict:
        jobs.cancel(request.path_params["job"])
        return jobs.progress(request.path_params["job"])

    def rows(request: Request, _: dict) -> dict:
        q = request.query_params
        return view.output_page(
            request.path_params["name"],
            request.path_params["version"],
            where=q.get("where") or None,
            order=q.get("order") or None,
            descending=q.get("desc") in ("1", "true"),
            offset=_int(request, "offset", 0),
            limit=_int(request, "limit", 50),
        )

    def backward(request: Request, body: dict) -> dict:
        return view.backward(
            request.path_params["name"],
            request.path_params["version"],
            rids=body.get("rids"),
            where=body.get("where"),
            source=body.get("source"),
            offset=body.get("offset", 0),
            limit=body.get("limit", 50),
        )

    def forward(request: Request, body: dict) -> dict:
        source = body.get("source")
        if not isinstance(source, str):
            raise InvalidArgument("a forward trace names its source")
        return view.forward(
            request.path_params["name"],
            request.path_params["version"],
            source,
            body.get("rids"),
            offset=body.get("offset", 0),
            limit=body.get("limit", 50),
        )

    def violations(request: Request, _: dict) -> dict:
        q = request.query_params
        if not q.get("a") or not q.get("b"):
            raise InvalidArgument("a functional dependency names two output columns: a and b")
        p = request.path_params
        return view.violations(p["name"], p["version"], q["a"], q["b"], limit=_int(request, "limit", 50))

    def provenance(request: Request, body: dict) -> dict:
        return view.provenance(request.path_params["name"], request.path_params["version"], body.get("rids"))

    def linked(request: Request, _: dict) -> dict:
        q = request.query_params
        xs = q.getlist("x") or None
        xs = [x or None for x in xs] if xs else None
        return view.linked(q.getlist("c"), q.get("source") or None, xs, q.get("m") or None)

    def brush(request: Request, body: dict) -> dict:
        b = body.get
        return view.brush(b("captures"), b("chart"), b("groups"), b("source"), b("x"), b("measure"))

    def page(_: Request) -> FileResponse:
        return FileResponse(STATIC / "index.html")

    capture_path = "/api/captures/{name}/{version:int}"
    routes = [
        Route("/", page),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route("/api/captures", _answering(captures)),
        Route("/api/captures/{name}", _answering(capture)),
        Route(capture_path + "/rows", _answering(rows)),
        Route(capture_path + "/backward", _answering(backward), methods=["POST"]),
        Route(capture_path + "/forward", _answering(forward), methods=["POST"]),
        Route(capture_path + "/provenance", _answering(provenance), methods=["POST"]),
        Route(capture_path + "/violations", _answering(violations)),
        Route(capture_path + "/replay", _answering(replay), methods=["POST"]),
        Route("/api/session", _answering(session_info)),
        Route("/api/capture", _answering(start_capture), methods=["POST"]),
        Route("/api/graph", _answering(graph)),
        Route("/api/graph/build", _answering(build_graph), methods=["POST"]),
        Route("/api/jobs/{job}", _answering(job)),
        Route("/api/jobs/{job}/cancel", _answering(cancel), methods=["POST"]),
        Route("/api/linked", _answering(linked)),
        Route("/api/linked/brush", _answering(brush), methods=["POST"]),
    ]
    app = Starlette(
        routes=routes, middleware=[Middleware(Guard, token=token, hosts=allowed_hosts(host, port), port=port)]
    )
    app.state.jobs = jobs
    return app
