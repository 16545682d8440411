"""End-to-end backward traces answered from the lineage graph: ``cap.backward(rows,
end_to_end=True)`` reads the output rows' components once (CCProv) instead of tracing
job by job, when the graph's build holds every capture the trace passes through.

The answer has the shape of a trace job by job (``query/planner.py``): per source that
no capture wrote, keyed by the writers on the way (``clean/orders``: source ``orders``
of capture ``clean``, which wrote a source of this one), the source's rows behind the
output rows. In the graph, a source of capture ``X`` is the triples of op ``X@v:source``;
the rows a trace reaches through ``X`` are those triples' sources. That holds when each
capture is reached along one path of writers only; where two paths meet (a capture
whose output two sources of the pipeline read), a capture on the way is not in the
build (made since, or a newer version), or one kept no lineage of a source (a
workload's ``sources``), the graph has no answer and the trace goes job by job.

>>> _key(["clean"], "orders"), _key([], "orders")
('clean/orders', 'orders')
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from ..capture.restricted import warn_restricted
from ..errors import EmbeddedUnsupported, LineageTooLarge
from ..query import engines
from ..query.planner import Planner
from ..store.format import RID
from .queries import GraphNotBuilt, StoredGraph
from .triples import capture_version_name

log = logging.getLogger("sparkprov")

STARTS_MAX = 100_000  # output rows a graph trace starts from; more go job by job


def _key(path: list[str], source: str) -> str:
    return "/".join([*path, source])


def _leaves(planner: Planner) -> tuple[list[tuple[str, Planner, str]], set[str]] | None:
    """``(answer key, capture, source)`` of every source no capture wrote, reached
    through the writers of ``planner``'s sources, and every capture on the way
    (``name@version``, ``planner``'s included); None where a capture is reached twice
    or kept no lineage of a source (a workload's ``sources``: the graph has none of its
    triples, where a trace job by job says so)."""
    found, seen = [], {capture_version_name(planner.entry)}
    stack: list[tuple[Planner, list[str]]] = [(planner, [])]
    while stack:
        at, path = stack.pop()
        for source in at.infos:
            if source not in at.entry.lineage.sources:
                return None
            writer = at.writer_of(source)
            if writer is None:
                found.append((_key(path, source), at, source))
                continue
            name = capture_version_name(writer.entry)
            if name in seen:
                return None
            seen.add(name)
            stack.append((writer, [*path, writer.name]))
    return found, seen


def backward(stored: StoredGraph | None, planner: Planner, out_rids) -> dict[str, DataFrame] | None:
    """``{key: source rows}`` behind output rows ``out_rids`` (a list, or a DataFrame of
    ``_sp_rid``) of ``planner``'s capture, from ``stored``; None where the graph cannot
    answer (see the module's docstring)."""
    if stored is None:
        return None
    walked = _leaves(planner)
    built = {f"{n}@{v}" for n, v in stored.meta["captures"]}
    if walked is None or not walked[1] <= built:  # every capture on the way, the first included
        return None
    leaves = walked[0]
    if isinstance(out_rids, DataFrame):
        taken = out_rids.select(RID).limit(STARTS_MAX + 1).collect()
        if len(taken) > STARTS_MAX:
            return None
        out_rids = [r[0] for r in taken]
    triples = stored.reach(capture_version_name(planner.entry), np.asarray(out_rids, np.int64), "backward")
    answer = {}
    for key, at, source in leaves:
        at.trusted()
        if at is not planner:  # as a trace job by job warns of each capture on the way
            warn_restricted(at.entry, [source])
        op = f"{capture_version_name(at.entry)}:{source}"
        rids = np.unique(triples.filter(pc.equal(triples.column("op"), op)).column("src_rid").to_numpy())
        answer[key] = _rows(at, source, rids)
    log.info("sparkprov: end-to-end trace from the lineage graph (%d triples)", triples.num_rows)
    return answer


def _rows(planner: Planner, source: str, rids: np.ndarray) -> DataFrame:
    """Rows ``rids`` of ``source`` as a trace returns them: read here when few, else by Spark."""
    if len(rids) <= engines.ROWS_LIMIT:
        try:
            table = planner.embedded().source_rows(source, rids)
            return engines.local_dataframe(planner.spark, table, engines.source_schema(planner.infos[source].schema))
        except (EmbeddedUnsupported, LineageTooLarge):
            pass
    return engines.rows_by_rid(planner.spark, planner.source_rows(source), rids)


def stored_graph(folders) -> StoredGraph | None:
    """The current build in ``folders``, or None when there is none."""
    try:
        return StoredGraph(folders)
    except GraphNotBuilt:
        return None
