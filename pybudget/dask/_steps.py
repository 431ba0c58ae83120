"""The pieces of a round that both engines run in the same order, so that a fit gives
the same bits on either: a ring visit over one group of problems, and the sums of the
partitions' scalars (always in partition order).  Payloads map a problem to its weights
and the ring's carried scalars; every function but the ring's visit returns new arrays
and leaves its inputs alone (a Dask worker may hand the same input to several tasks)."""
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pybudget._core._parallel import map_threads
from pybudget.dask._partition import PartCheck, roll_ring
from pybudget.linear._dual_cd import sum_of_squares

@dataclass(frozen=True)
class Gap:
    """One problem's relative duality gap (P - D) / |P| with its primal and dual
    objectives and its largest KKT violation (``gap_of``)."""
    rel: float
    primal: float
    dual: float
    kkt: float


@dataclass(frozen=True)
class WeightStats:
    """What a check pass's last partition reads of a ring row: |w|^2 and the ring's
    dual CD steps so far (``weight_stats``)."""
    w2: float
    steps: float


@dataclass(frozen=True)
class CheckResult:
    """An engine's check of one problem (``checked``): its partitions' PartCheck
    scalars summed in partition order (the largest kkt), and its weights' statistics
    (WeightStats) as the pass read them."""
    loss: float
    dual_terms: float
    kkt: float
    w2: float
    steps: float

    def gap(self):
        """The Gap of these sums (``gap_of``)."""
        return gap_of(self.w2, self.loss, self.dual_terms, self.kkt)


@dataclass(frozen=True)
class CheckPass:
    """A group's check pass as it travels (``check_visit``) and ends
    (``_worker.check_found``): the payload's rows (their weights unchanged; at the end,
    the rows of the problems that passed, when asked), ``found`` = {partition:
    {problem: PartCheck}} of the partitions passed so far, and ``stats`` =
    {problem: WeightStats} once every partition is in (None before)."""
    rows: object
    found: dict
    stats: dict = None


def ring_groups(active, n_parts):
    """The ring's groups: (start partition, problems), problem j starting at j mod K."""
    groups = {}
    for j in active:
        groups.setdefault(j % n_parts, []).append(j)
    return sorted(groups.items())


class RingRow(NamedTuple):
    """What the ring passes on per problem: its weights (or, between workers, the
    ``Changes`` to them) and what it carries (one ``RING_CARRY`` record)."""
    w: object
    carry: np.ndarray


def ring_visit(P, rnd, payload, problems, sweeps, first, lap=0, laps=1, emit=None,
               threads=1):
    """Partition P's visit of one group: the payload {j: RingRow} of ``problems``
    (rows of payload) after P's sweeps (or its lap-th share of one sweep); ``first``:
    the round starts here.  The ring owns its payloads: the arrays change in place (a
    copy of 8 bytes a feature per problem and visit saved), so whoever keeps one for
    later (a checkpoint) keeps a copy.  ``payload`` may be any mapping that hands over
    a row when asked (the Dask engine's, taking rows from the worker that holds them),
    and ``emit(j, row)``, when given, takes each row as soon as its visit ends (its
    value is kept for j in the result).  The problems are independent: with
    ``threads`` > 1 they are spread over that many threads (the rows all taken first,
    by this thread), and every problem's bits are those of one thread."""
    def one(j, row):
        row = RingRow(owned(row.w), owned(row.carry))
        if first:
            roll_ring(P.kind, [row.carry], rnd)
        P.visit(j, rnd, row.w, sweeps, row.carry, lap, laps)
        return row if emit is None else emit(j, row)

    threads = P.rules.visit_threads(threads, len(problems), P.Xk.nnz * max(sweeps, 1) / laps)
    if threads <= 1:
        return {j: one(j, payload[j]) for j in problems}
    rows = [(j, payload[j]) for j in problems]
    return dict(zip(problems, map_threads(one, rows, threads)))


def passed_in(carried, stop):
    """The problems that passed ``stop`` in a finished check pass: the round that
    follows the check on the workers visits the others only, as the driver decides from
    the same sums (so the client need not answer in between)."""
    found, stats = carried.found, carried.stats
    sums = checked(found_by_partition([found], len(found)), stats, list(stats))
    return passed(sums, stop)


def gap_of(w2, loss, terms, kkt):
    """The Gap of one problem from |w|^2 and its partitions' summed check scalars."""
    primal = 0.5 * w2 + loss
    dual = terms - 0.5 * w2
    gap = (primal - dual) / abs(primal) if primal != 0 else 0.0
    return Gap(rel=gap, primal=primal, dual=dual, kkt=kkt)


def passed(sums, stop):
    """The problems of a check result ({j: CheckResult}) whose largest KKT violation is
    at most ``stop`` (tol in the problem's unit: ``FitSpec.kkt_unit``)."""
    return {j for j, s in sums.items() if s.kkt <= stop}


class Changes:
    """A ring row's weights sent as their changes (the ring's sparse hops): the
    change-sets (run, indices, new values) of the runs after the oldest replica on the
    other workers, and, while a replica older than it remains, a base: the weights
    themselves as of run ``base_run``.  A worker's replica as of its last run (or the
    base, when newer) plus the later change-sets in order is the weights, bit for bit
    (new values, not increments)."""
    __slots__ = ("log", "base", "base_run")

    def __init__(self, log=(), base=None, base_run=-1):
        self.log, self.base, self.base_run = tuple(log), base, base_run

    @property
    def nbytes(self):
        return (sum(i.nbytes + v.nbytes for _, i, v in self.log)
                + (0 if self.base is None else self.base.nbytes))

    def after(self, run):
        """The change-sets of the runs after ``run``."""
        return tuple(cs for cs in self.log if cs[0] > run)

    def apply(self, w, since):
        """w (a replica as of run ``since``) brought up to date, in place."""
        if self.base is not None and since < self.base_run:
            np.copyto(w, self.base)
            since = self.base_run
        for _, idx, vals in self.after(since):
            w[idx] = vals

    def sent_on(self, w, run, keep, own=()):
        """What to send after a run (number ``run``; own: its change-set) that left the
        weights at w, when every other worker's replica is as of ``keep`` or later: the
        change-sets after keep (after the base, and the base, while a replica older
        than the base remains), or, when they would take as many bytes as w, w itself
        as a new base."""
        if self.base_run > keep:        # a replica older than the base remains
            out = Changes(self.after(self.base_run) + tuple(own), self.base, self.base_run)
        else:
            out = Changes(self.after(keep) + tuple(own))
        if out.nbytes - (0 if out.base is None else out.base.nbytes) >= w.nbytes:
            return Changes((), w.copy(), run)
        return out


def change_set(run, before, w):
    """The change-set of one run: the entries of w whose bits differ from before."""
    idx = np.flatnonzero(w.view(np.int64) != before.view(np.int64)).astype(np.int32)
    return (run, idx, w[idx])


def owned(a):
    """a, or a copy when it is read-only (as an array received may be)."""
    return a if a.flags.writeable else a.copy()


def ring_order(start, n_parts, laps):
    """The visits of one ring round from partition ``start``: (partition, lap), every
    partition once per lap."""
    return [((start + s) % n_parts, lap) for lap in range(laps) for s in range(n_parts)]


def check_order(start, n_parts):
    """The partitions of a group's check pass after a ring round: backwards from where
    the round ended (start - 1) to ``start``, where the next round begins, so that the
    pass costs the hops of the round's own way back (none more when K = 2)."""
    return [(start - 1 - s) % n_parts for s in range(n_parts)]


def checked_groups(groups, due):
    """The groups (start, problems) cut to their problems in ``due`` (all when None),
    in the same order; a group may be left with none."""
    due = None if due is None else set(due)
    return [(start, [j for j in problems if due is None or j in due])
            for start, problems in groups]


def check_visit(P, part, carried, problems, n_parts, emit=None, threads=1):
    """Partition ``part``'s share of a group's check pass: a CheckPass (the payload's
    rows, unchanged and not copied) with this partition's PartChecks added, and once
    all n_parts partitions are in, the weights' statistics; ``carried`` is the payload
    or the previous partition's CheckPass.  ``emit`` and ``threads`` as for
    ``ring_visit``."""
    if isinstance(carried, CheckPass):
        payload, found = carried.rows, carried.found
    else:
        payload, found = carried, {}
    checked = set(problems)
    found = dict(found)
    last = len(found) + 1 == n_parts

    def one(j, row):
        mine = stat = None
        if j in checked:
            mine = P.check(j, weights_of(row))
            if last:
                stat = weight_stats([{j: row}], [j])[j]
        return mine, stat, (row if emit is None else emit(j, row))

    order = list(payload)             # (every row of the payload goes on)
    threads = P.rules.visit_threads(threads, len(checked), P.Xk.nnz)
    if threads <= 1:
        outs = [one(j, payload[j]) for j in order]
    else:
        outs = map_threads(one, [(j, payload[j]) for j in order], threads)
    mine = {j: m for j, (m, _, _) in zip(order, outs) if m is not None}
    stats = {j: st for j, (_, st, _) in zip(order, outs) if st is not None}
    rows = {j: row for j, (_, _, row) in zip(order, outs)}
    found[part] = {j: mine[j] for j in problems if j in mine}
    return CheckPass(rows=rows, found=found, stats=stats if last else None)


def payload_of(result):
    """The payload of a ring task's result (a check pass's: its CheckPass's rows)."""
    return result.rows if isinstance(result, CheckPass) else result


def weights_of(row):
    """The weights of a payload row: a RingRow's on the ring, the row otherwise."""
    return row.w if isinstance(row, RingRow) else row


def merged(payloads):
    """{j: row} of several payloads (each problem is in one of them)."""
    rows = {}
    for pl in payloads:
        rows.update(pl)
    return rows


def payload_nbytes(payload):
    """Bytes of the arrays of a payload ({j: w} or {j: RingRow})."""
    return sum(sum(a.nbytes for a in row) if isinstance(row, RingRow) else row.nbytes
               for row in payload.values())


def sum_checks(per_part, problems):
    """Partitions' PartChecks (a list in partition order of {problem: PartCheck}) ->
    {j: their sum, a PartCheck (loss and terms added in partition order, the largest
    kkt)}."""
    out = {}
    for j in problems:
        loss = terms = kkt = 0.0
        for s in per_part:
            loss += s[j].loss
            terms += s[j].dual_terms
            kkt = max(kkt, s[j].kkt)
        out[j] = PartCheck(loss=loss, dual_terms=terms, kkt=kkt)
    return out


def weight_stats(payloads, problems):
    """{j: WeightStats of w_j}."""
    rows = merged(payloads)
    return {j: WeightStats(w2=sum_of_squares(weights_of(rows[j])),
                           steps=float(rows[j].carry["steps"][0]))
            for j in problems}


def found_by_partition(founds, n_parts):
    """The check passes' {partition: {problem: PartCheck}} of every group -> a list in
    partition order of {problem: PartCheck}."""
    per = [{} for _ in range(n_parts)]
    for found in founds:
        for p, scalars in found.items():
            per[p].update(scalars)
    return per


def checked(per_part, stats, problems):
    """An engine's check result: {j: CheckResult} from the partitions' PartChecks and
    the weights' statistics ({j: WeightStats})."""
    sums = sum_checks(per_part, problems)
    return {j: CheckResult(loss=sums[j].loss, dual_terms=sums[j].dual_terms,
                           kkt=sums[j].kkt, w2=stats[j].w2, steps=stats[j].steps)
            for j in problems}
