"""``sp.choose_keep``: a function whose output rows read many input rows (a running
window, by its payload: where the window starts) keeps its payloads when only they fit
the disk budget; the choice is what a capture then keeps, and its lineage is the same;
budgets no choice meets, queries without such functions and bad workloads are refused."""

from __future__ import annotations

import pandas as pd
import pytest

import sparkprov as sp
from sparkprov.store.lineage_bytes import stored_lineage_bytes


def running_sum(pdf: pd.DataFrame) -> pd.DataFrame:
    # each row's sum over its group's rows so far: payload 0, the window's first row
    out = pdf.sort_index()
    return pd.DataFrame({"g": out.g, "k": out.k, "s": out.x.cumsum(), "lo": 0})


ROLLING = sp.lineage("payload", column="lo", map_p=lambda i, lo, meta: range(lo, i + 1))(running_sum)


@pytest.fixture
def query(spark, session):
    rows = [(k % 3, k, k % 7) for k in range(450)]
    t = session.source(spark.createDataFrame(rows, "g long, k long, x long"), "t")
    return t.groupBy("g").applyInPandas(ROLLING, "g long, k long, s long")


def test_payloads_kept_when_only_they_fit_the_disk_budget(session, query):
    workload = [sp.Trace("backward", "k in (10, 200, 449)", "t"), sp.Trace("forward", "k = 3", "t")]
    plan = sp.choose_keep(session, query, workload, repeat=1, max_disk=10**12)
    pairs, payload = plan.base.bytes, plan.base.bytes + plan.deltas["running_sum"].bytes
    assert payload * 2 < pairs, plan.explain()  # about 75 rows' pairs each, against a payload
    tight = sp.choose_keep(session, query, workload, repeat=1, max_disk=(pairs + payload) / 2)
    assert tight.keep == {"running_sum": "payload"}, tight.explain()
    assert tight.measured.bytes <= (pairs + payload) / 2, tight.explain()
    assert "running_sum" in tight.explain() and "predicted:" in tight.explain()
    assert not [c for c in session.captures() if c.startswith("sparkprov-choose-keep")]  # its captures removed
    chosen, kept = session.capture(query, "chosen", keep=tight.keep), session.capture(query, "pairs")
    for cap in (chosen, kept):
        cap.build_lineage()  # a pair table made by the first trace that needs one: counted
    assert stored_lineage_bytes(chosen._entry) * 2 < stored_lineage_bytes(kept._entry)
    for rows in ("k = 200", "k in (0, 1, 449)"):
        by = [sorted(r.k for r in c.backward(rows, "t").collect()) for c in (chosen, kept)]
        assert by[0] == by[1] and len(by[0]) > 1, rows
    with pytest.raises(sp.InvalidArgument, match="no choice of keeps fits the budgets"):
        sp.choose_keep(session, query, workload, repeat=1, max_disk=1)


def test_nothing_to_choose_and_bad_arguments_are_refused(spark, session, query):
    plain = session.source(spark.range(5), "plain")
    with pytest.raises(sp.InvalidArgument, match="no function of this query declares payload or composite"):
        sp.choose_keep(session, plain.where("id > 1"), [sp.Trace("backward", [0])])
    for workload, match in (
        ([], "non-empty list of traces"),
        (sp.Trace("backward", [0]), "a list of traces"),
        ([("sideways", [0])], "'backward' or 'forward', not 'sideways'"),
        ([("forward", [0])], "give source="),
    ):
        with pytest.raises(sp.InvalidArgument, match=match):
            sp.choose_keep(session, query, workload)
    with pytest.raises(sp.InvalidArgument, match="repeat must be a whole number"):
        sp.choose_keep(session, query, [sp.Trace("backward", [0])], repeat=0)
    with pytest.raises(sp.InvalidArgument, match="max_disk must be a number"):
        sp.choose_keep(session, query, [sp.Trace("backward", [0])], max_disk="1g")
