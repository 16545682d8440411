"""Forward queries over stored payloads, which must run the payload function on every
entry: scanned against a deadline and given up early when they would pass it, so the
query executor can run the operator again instead (SubZero VII-A)."""

from __future__ import annotations

import numpy as np

from .cells import distinct


class OverBudget(Exception):
    """A scan of stored lineage passed the deadline it was given (the query executor
    then runs the operator again instead)."""


class _Scan:
    """Progress of a scan that must end by a deadline: stopped as soon as the rate so
    far says it would not (SubZero VII-A's statistics gathered while the query runs),
    so giving up costs a small part of the budget, not all of it."""

    def __init__(self, total: int, deadline: float | None) -> None:
        import time

        self.clock = time.perf_counter
        self.total, self.deadline, self.done, self.next_check = total, deadline, 0, 16
        self.started = self.clock()

    def advance(self, units: int) -> None:
        self.done += units
        if self.deadline is None or self.done < self.next_check:
            return
        self.next_check = self.done + 256
        now = self.clock()
        finish = now + (now - self.started) / self.done * (self.total - self.done)
        if finish > self.deadline:
            raise OverBudget


def scan_payloads(map_p, groups: dict, ids: np.ndarray, deadline: float | None) -> np.ndarray:
    """A forward query over payloads (``groups``: each payload's output cells): every
    output cell's inputs computed, checked against the query's cells ``ids``; given up
    (``OverBudget``) as soon as it would end past ``deadline``."""
    many = getattr(map_p, "many", None)
    hit = []
    scan = _Scan(sum(len(g) for g in groups.values()), deadline)
    wanted = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
    wanted[ids] = True  # membership by indexing: isin would sort the query's cells at every call

    def reaches(found) -> bool:
        found = np.asarray(found, dtype=np.int64).ravel()
        return bool(wanted[found[(found >= 0) & (found < len(wanted))]].any())

    for payload, group in groups.items():
        # a payload's cells together first: none of them is reached if their union is not
        if many is not None and not reaches(many(np.asarray(group, np.int64), payload)):
            scan.advance(len(group))
            continue
        for c in group.tolist():
            scan.advance(1)
            if reaches(map_p(c, payload)):
                hit.append(c)
    return distinct(hit)
