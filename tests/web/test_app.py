"""The page's server without a browser: who it answers, what it refuses, and its JSON
answers against the Python API's."""

from __future__ import annotations

import pyspark.sql.functions as F
import pytest
from starlette.testclient import TestClient

from sparkprov.web.app import make_app
from sparkprov.web.data import PAGE_MAX, StoreView
from sparkprov.web.guard import HEADER, cookie_name

COOKIE = cookie_name(8765)

TOKEN = "secret-token"
BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def client(ui_session):
    return TestClient(make_app(str(ui_session.store.root), TOKEN), base_url=BASE, follow_redirects=False)


def _get(client, path, **kw):
    return client.get(path, headers={HEADER: TOKEN, **kw.pop("headers", {})}, **kw)


def _post(client, path, body, **kw):
    return client.post(path, json=body, headers={HEADER: TOKEN, **kw.pop("headers", {})}, **kw)


def test_nothing_is_answered_without_the_token(client):
    for path in ("/", "/static/app.js", "/api/captures", "/api/captures/totals"):
        assert client.get(path).status_code == 403
        assert client.get(path, headers={HEADER: "wrong"}).status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    assert client.post("/api/captures/totals/1/backward", json={"where": "true"}).status_code == 403


def test_the_printed_address_sets_a_strict_cookie_and_drops_the_token_from_the_address(client):
    first = client.get(f"/?token={TOKEN}")
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"].lower()
    assert f"{COOKIE}={TOKEN}".lower() in cookie and "httponly" in cookie and "samesite=strict" in cookie
    client.cookies.set(COOKIE, TOKEN)
    page = client.get("/")
    client.cookies.clear()
    assert page.status_code == 200 and '<script src="/static/app.js">' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert page.headers["referrer-policy"] == "no-referrer"


def test_requests_naming_another_host_are_refused(client):
    # a site whose name was rebound to 127.0.0.1 sends its own name as Host
    assert _get(client, "/api/captures", headers={"host": "evil.example:8765"}).status_code == 400
    assert _get(client, "/api/captures", headers={"host": "127.0.0.1:9999"}).status_code == 400
    assert _get(client, "/api/captures", headers={"host": "localhost:8765"}).status_code == 200


def test_what_is_not_get_sends_json_from_this_origin(client):
    path = "/api/captures/totals/1/backward"
    form = client.post(path, data={"where": "true"}, headers={HEADER: TOKEN})
    assert form.status_code == 415
    assert _post(client, path, {"where": "true"}, headers={"origin": "http://evil.example"}).status_code == 403
    assert _post(client, path, {"where": "true"}, headers={"origin": BASE}).status_code == 200
    assert _get(client, path).status_code == 405  # traces are not GET


def test_no_request_that_changes_state_or_starts_work_is_a_get(client):
    posts = [r.path for r in client.app.routes if getattr(r, "methods", None) and "POST" in r.methods]
    assert {"/api/capture", "/api/graph/build", "/api/jobs/{job}/cancel"} <= set(posts)
    for path in posts:
        concrete = path.replace("{name}", "totals").replace("{version:int}", "1").replace("{job}", "j")
        assert "GET" not in next(r for r in client.app.routes if getattr(r, "path", None) == path).methods
        assert _get(client, concrete).status_code == 405, path


@pytest.mark.parametrize(
    "path",
    [
        "/static/../../../../etc/passwd",
        "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/static/..%2f..%2f..%2fweb%2fdata.py",
        "/api/captures/..%2f..%2fFORMAT",
        "/api/captures/%2e%2e/1/rows",
        "/api/captures/..%2fcatalog/1/rows",
    ],
)
def test_no_request_reads_a_file_outside_the_page_and_the_store(client, path):
    response = _get(client, path)
    assert response.status_code in (400, 404)
    assert "root:" not in response.text and "format_version" not in response.text and "import" not in response.text


def test_predicates_pass_the_apis_validation(client):
    rows = _get(client, "/api/captures/big/1/rows", params={"where": "amount > 1; DROP TABLE t"})
    assert rows.status_code == 400 and rows.json()["kind"] == "InvalidPredicate"
    unknown = _get(client, "/api/captures/big/1/rows", params={"where": "nope > 1"})
    assert unknown.status_code == 400 and "nope" in unknown.json()["error"]
    traced = _post(client, "/api/captures/big/1/backward", {"where": "DELETE FROM t"})
    assert traced.status_code == 400 and traced.json()["kind"] == "InvalidPredicate"


def test_bad_arguments_say_what_is_wrong(client):
    assert _get(client, "/api/captures/nope").status_code == 404
    assert _get(client, "/api/captures/totals/9/rows").status_code == 404
    assert _get(client, "/api/captures/big/1/rows", params={"offset": "x"}).json()["error"].startswith("offset")
    assert _get(client, "/api/captures/big/1/rows", params={"order": "nope"}).status_code == 400
    assert _post(client, "/api/captures/big/1/backward", {"rids": []}).status_code == 400
    assert _post(client, "/api/captures/big/1/backward", {"rids": ["x"]}).status_code == 400
    assert _post(client, "/api/captures/big/1/forward", {"rids": ["1"]}).json()["error"].endswith("names its source")
    assert (
        client.post(
            "/api/captures/big/1/backward", content=b"{", headers={HEADER: TOKEN, "content-type": "application/json"}
        ).status_code
        == 400
    )
    failed = _get(client, "/api/captures/broken")
    assert failed.status_code == 500 and "ZeroDivisionError" in failed.json()["error"]


def test_output_pages_and_traces_equal_the_python_api(ui_session):
    view = StoreView(str(ui_session.store.root))
    cap = ui_session.load("big")
    (source,) = cap.sources
    every = view.output_page("big", 1, order="amount", descending=True, limit=PAGE_MAX + 5)
    expected = cap.output.orderBy(F.col("amount").desc()).collect()
    assert every["total"] == len(expected) == len(every["rows"]) and len(expected) < PAGE_MAX
    assert every["rows"] == [[r["id"], r["who"], r["amount"]] for r in expected]

    picked = every["rids"][:7]
    answer = view.backward("big", 1, rids=picked, limit=3, offset=2)
    behind = cap.backward([int(r) for r in picked], source, engine="spark").orderBy("_sp_rid").collect()
    assert answer["matched"] == 7 and answer["sources"][source]["count"] == len(behind)
    assert answer["sources"][source]["rids"] == [str(r["_sp_rid"]) for r in behind[2:5]]

    forward = view.forward("big", 1, source, answer["sources"][source]["rids"])
    reached = cap.forward(source, [int(r) for r in answer["sources"][source]["rids"]], engine="spark")
    assert forward["rids"] == sorted(str(r["_sp_rid"]) for r in reached.collect())
    assert [c["name"] for c in view.captures("BI")["captures"]] == ["big"] and view.captures("zzz")["total"] == 0
    page = view.captures(offset=1, limit=2)
    assert page["total"] == 10 and [c["name"] for c in page["captures"]] == ["broken", "buckets"]


def test_linked_views_say_what_is_wrong(client):
    assert "two captures" in _get(client, "/api/linked", params=[("c", "totals")]).json()["error"]
    assert _get(client, "/api/linked", params=[("c", "../x"), ("c", "totals")]).status_code == 400
    assert _get(client, "/api/linked", params=[("c", "nope"), ("c", "totals")]).status_code == 404
    linked = _get(client, "/api/linked", params=[("c", "totals"), ("c", "buckets")]).json()
    assert [c["capture"] for c in linked["charts"]] == ["totals", "buckets"] and linked["rows"] == 200
    body = {"captures": ["totals", "buckets"], "chart": 1}
    assert _post(client, "/api/linked/brush", {**body, "groups": [10]}).status_code == 400
    assert _post(client, "/api/linked/brush", {**body, "groups": "0"}).status_code == 400
    assert _post(client, "/api/linked/brush", {**body, "chart": 2, "groups": [0]}).status_code == 400
    brushed = _post(client, "/api/linked/brush", {**body, "groups": [0]}).json()
    assert brushed["brushed"] == 20 and sum(brushed["counts"][0]) == 20


def test_why_and_how_need_witnesses_and_few_rows(client):
    refused = _post(client, "/api/captures/totals/1/provenance", {"rids": ["0"]})
    assert refused.status_code == 409 and "witness" in refused.json()["error"]
    too_many = _post(client, "/api/captures/whos/1/provenance", {"rids": [str(i) for i in range(51)]})
    assert too_many.status_code == 400 and "at most 50" in too_many.json()["error"]
    answer = _post(client, "/api/captures/whos/1/provenance", {"rids": ["0"]}).json()
    (row,) = answer["rows"]
    assert answer["columns"] == ["who"] and row["witnesses"] == 50 and all(w["size"] == 1 for w in row["why"])


def test_replays_need_the_session_and_say_what_is_wrong(client, ui_session):
    from sparkprov.web.app import make_app

    refused = _post(client, "/api/captures/totals/1/replay", {"drop": {"x": [1]}})
    assert refused.status_code == 409 and "session.ui()" in refused.json()["error"]
    assert _get(client, "/api/captures/totals").json()["replayable"] is False
    replaying = TestClient(make_app(str(ui_session.store.root), TOKEN, session=ui_session), base_url=BASE)
    assert _get(replaying, "/api/captures/totals").json()["replayable"] is True
    assert _post(replaying, "/api/captures/totals/1/replay", {"drop": "all"}).status_code == 400
    unknown = _post(replaying, "/api/captures/totals/1/replay", {"drop": {"nope": [1]}})
    assert unknown.status_code == 400 and "no source 'nope'" in unknown.json()["error"]
    assert _get(replaying, "/api/jobs/nope").status_code == 400


def test_a_fault_of_sparkprovs_is_answered_as_json_with_its_kind(ui_session, monkeypatch):
    from sparkprov.web.app import make_app
    from sparkprov.web.data import StoreView as View

    def broken(self, *args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(View, "captures", broken)
    client = TestClient(make_app(str(ui_session.store.root), TOKEN), base_url=BASE)
    answer = _get(client, "/api/captures")
    assert answer.status_code == 500 and answer.json() == {"error": "RuntimeError: boom", "kind": "InternalError"}
