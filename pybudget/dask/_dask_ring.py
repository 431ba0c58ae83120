"""The ring on a Dask cluster: ``DaskRing``, every problem's weights and the ring's
tables over a ``_dask_engine.DaskEngine``'s partitions (``Engine.ring``), its
checkpoints and their restore (``_checkpoints.Checkpointing``).

The weights live on the workers: a group of problems travels the partitions in runs of
consecutive visits on one worker, one task a run (``_worker.ring_task``); its weights
stay on the worker that ran it (``_worker.Held``) and the next run takes them from
there.  The client receives scalars (gaps, counters), the rows of the problems a check
passed, and at the end the other weights.  With more than one lap a round, the hops
send the changes of the weights against every worker's replicas (sparse hops), until
they take ``ClusterRules.sparse_give_up`` of the bytes of the weights.  The check pass
travels the same way (``_worker.ring_check_task``).
"""
import operator

from pybudget.dask import _steps, _worker
from pybudget.dask._checkpoints import Checkpointing
from pybudget.dask._engines import assemble, initial_weights, start_payload
from pybudget.dask._partition import first_carry


class DaskRing(Checkpointing):
    """The ring's weights and tables on a DaskEngine's workers (see the module
    docstring); set up at construction."""

    def __init__(self, eng, spec):
        self.eng = eng
        self.kept_no = 0         # the number of the latest checkpoint the workers keep
        self.replica_runs = {}   # sparse hops: group -> {worker: the run of its replicas}
        self.latest = {}         # group -> the number of its latest run
        self.run_no = 0          # the sparse hops' runs that changed weights so far
        self.as_dense = 0        # bytes the sparse hops would have taken as weights,
        self.as_sparse = 0       # and what they took (counted where they arrived)
        self.sparse_off = eng.rules.sparse_laps - 1   # laps up to which it sends weights
        self.unpolled = False    # sparse hops may have arrived since the last poll
        self.tags = 0            # the ring's runs that leave their rows held (Held)
        self.last_on = {}        # worker -> the future of the latest run submitted there
        self.held = set()        # keys of the futures whose result is a Held
        self.setup(spec)

    def setup(self, spec):
        """Every problem's local state and its initial weights, where each group's
        first visit is."""
        eng = self.eng
        self.spec = spec
        eng.client.run(_worker.install)      # (the ring's rows move through it)
        inits = [eng._submit(_worker.setup_task, p, eng.job, p, spec) for p in eng.where]
        n_problems = self.n_problems = spec.n_problems
        self.done, self.last_on = {}, {}
        # each group's weights where its first visit is
        groups = _steps.ring_groups(range(n_problems), len(eng.where))
        self.row_bytes = (spec.d + 1) * 8 + first_carry("svm", 0).nbytes
        self.replica_runs, self.latest = {}, {}
        self.rows, self.loc = {}, {}
        for start, problems in groups:
            at = eng.where[start]
            fut = eng._on(at, _start, inits, problems, spec)
            self.rows.update({j: fut for j in problems})
            self.loc[fut.key] = at
        # (waited for by tokens: setup's errors surface here, the weights stay)
        eng._gather([eng._on(self.loc[f.key], _worker.barrier, f)
                     for f in self._payloads(range(n_problems))])
        eng._synced()

    def _finished(self, payloads):
        """Keep final rows here (the passed problems', gathered with a check's sums, and
        at the end the others)."""
        for pl in payloads:
            self.done.update(pl)
            self.eng.bytes["client"] += _steps.payload_nbytes(pl)

    def _received(self):
        """Add the bytes of the sparse hops, counted where they arrived (asked only
        while the ring may have sent some since the last call)."""
        eng = self.eng
        if self.replica_runs or self.unpolled:
            self.unpolled = False
            got = eng.client.run(_worker.take_received, eng.job, on_error="ignore")
            got = sum(v for v in got.values() if isinstance(v, int))
            eng.bytes["workers"] += got
            self.as_sparse += got

    def _payloads(self, problems, rows=None):
        """The distinct payload futures holding these problems' weights (in ``rows``,
        the engine's by default)."""
        rows = self.rows if rows is None else rows
        distinct = {}
        for j in problems:
            distinct.setdefault(rows[j].key, rows[j])
        return list(distinct.values())

    def _copies(self, rows, loc, copy=True):
        """(rows, loc) of copies of the payloads with the weights themselves, each made
        where its payload is (at loc[key]): the ring changes its payloads in place, so a
        checkpoint keeps copies and a recovery hands the ring copies of the checkpoint
        (``copy`` false: the weights as they are, for a ring that stops sending
        changes)."""
        fresh, new_loc = {}, {}
        for f in self._payloads(rows, rows):
            fresh[f.key] = self.eng._on(loc[f.key], _worker.rows_task, self.eng.job, f,
                                        self._held(f, rows), copy)
            new_loc[fresh[f.key].key] = loc[f.key]
        return {j: fresh[f.key] for j, f in rows.items()}, new_loc

    @staticmethod
    def _held(fut, rows):
        """The problems whose weights ``rows`` keeps in the payload of fut (a check
        pass's result keeps those it passed; the others went on)."""
        return [j for j, f in rows.items() if f.key == fut.key]

    def weights(self, n_problems, d):
        eng = self.eng
        got = eng._gather([eng._on(self.loc[f.key], _worker.rows_task, eng.job, f,
                                   self._held(f, self.rows), False)
                           for f in self._payloads(self.rows)])
        eng._synced()
        self._received()
        self._finished(got)
        return assemble(self.done, n_problems, d)

    def _runs(self, visits, part=lambda v: v):
        """Visits split into runs of consecutive ones on one worker (one task each)."""
        runs = [[visits[0]]]
        for v in visits[1:]:
            if self.eng.where[part(v)] == self.eng.where[part(runs[-1][-1])]:
                runs[-1].append(v)
            else:
                runs.append([v])
        return runs

    def _travels(self, travels):
        """Several groups' travels (``_travel``'s arguments each), their runs submitted
        position by position: each worker runs its runs in that order (a run takes the
        worker's previous one as an argument), so that where two groups swap workers,
        each worker passes its group on while it takes the other's, and no worker holds
        both (a run that took a group before its own had left would).  Returns
        [(the last future, the dense hops)] in order."""
        steps = list(enumerate(self._travel(*t) for t in travels))
        out = [None] * len(steps)
        while steps:
            left = []
            for k, g in steps:
                try:
                    next(g)
                    left.append((k, g))
                except StopIteration as stop:
                    out[k] = stop.value
            steps = left
        return out

    def _travel(self, group, visits, part, task, args):
        """A generator: a group (start partition, problems)'s payload through runs of
        visits, one task per run (a step each), with the extra arguments args(run
        number); a seeded group sends its changes (``_log``).  Returns the last task's
        future and the dense hops between workers."""
        eng = self.eng
        start, problems = group
        fut = self.rows[problems[0]]
        at = self.loc[fut.key]
        hops = 0
        runs = self._runs(visits, part)
        for i, run in enumerate(runs):
            here = eng.where[part(run[0])]
            log = self._log(start, at, here, task is _worker.ring_task)
            if log is not None and at != here:
                self.as_dense += len(problems) * self.row_bytes
            if log is None:
                hops += at != here
                eng._moved(len(problems) * self.row_bytes, at, here)
            if at != here and fut.key not in self.held:
                # (a payload itself is received by a task of its own: Dask keeps a
                # result on its worker until its dependents finish, so the sender would
                # hold its copy for the whole visit; this way only until it has arrived)
                fut = eng._on(here, _delivered, fut)
            tag = None
            if log is None:      # the rows stay on the worker (Held)
                self.tags += 1
                # (">": the next run takes them from another worker: _worker's pacing)
                to_peer = i + 1 < len(runs) and eng.where[part(runs[i + 1][0])] != here
                tag = f"{self.tags}{'>' if to_peer else ''}"
            fut = eng._submit(task, part(run[0]), eng.job, run, fut, problems,
                              *args(i), log, tag, self.last_on.get(here), track=False)
            self.last_on[here] = fut
            if tag is not None:
                self.held.add(fut.key)
            at = here
            yield
        self.loc[fut.key] = at
        for j in problems:
            self.rows[j] = fut
        return fut, hops

    def _log(self, start, at, here, changes):
        """The sparse hops' arguments of a group's next run on worker ``here`` (None for
        a group that sends its weights): (the run's number, or the group's latest run
        for a run that changes no weights (``changes`` false), the run of this worker's
        replicas, the oldest of the other workers', whether the payload comes from
        another worker)."""
        runs = self.replica_runs.get(start)
        if runs is None:
            return None
        if changes:
            self.run_no += 1
            self.latest[start] = self.run_no
        since = runs[here]
        runs[here] = self.latest[start]
        keep = min((v for w, v in runs.items() if w != here), default=runs[here])
        return (self.latest[start], since, keep, at != here)

    def _seed(self, groups):
        """Seed every worker's replicas of these groups' weights (from payloads of the
        weights themselves), so that their hops send changes from now on."""
        eng = self.eng
        workers = sorted(set(eng.where.values()))
        seeds = []
        for start, problems in groups:
            fut = self.rows[problems[0]]
            for w in workers:
                eng._moved(len(problems) * self.row_bytes, self.loc[fut.key], w)
                seeds.append(eng._on(w, _worker.seed_task, eng.job, fut, problems))
            self.replica_runs[start] = dict.fromkeys(workers, self.run_no)
            self.as_dense = self.as_sparse = 0
            self.latest[start] = self.run_no
        # (waited for: a run on a worker must find its replicas there)
        eng._gather(seeds)

    def round(self, rnd, groups, sweeps, laps, stop=None, due=None):
        sums = self._ring_round(rnd, groups, sweeps, laps, stop, due)
        self._prune()
        return sums

    def _prune(self):
        """Forget the places and Held marks of the payloads that hold no problem's
        weights any longer (else an entry per run, for the whole fit)."""
        live = {f.key for f in self.rows.values()}
        self.held &= live
        self.loc = {k: a for k, a in self.loc.items() if k in live}

    def _drop_replicas(self, problems, after=()):
        """Forget the workers' replicas (the sparse hops') of these problems (None: all),
        each worker once the futures ``after`` and its runs so far are done; its next
        run follows the drop."""
        eng = self.eng
        for w in sorted(set(eng.where.values())):
            prev = [self.last_on[w]] if w in self.last_on else []
            self.last_on[w] = eng._on(w, _worker.drop_replicas, eng.job, problems,
                                      *after, *prev)

    def _ring_round(self, rnd, groups, sweeps, laps, stop, due):
        eng = self.eng
        K = len(eng.where)
        checks = self._check_pass(groups, due, stop) if stop is not None else None
        # sparse hops when a visit covers part of a partition's rows: they change a
        # share of the weights then (and one lap's hops would each send all of them)
        fresh = [g for g in groups if g[0] not in self.replica_runs]
        if laps > self.sparse_off and fresh and len(set(eng.where.values())) > 1:
            self._seed(fresh)
        # (the hops before this round's: their bytes have arrived by the check's end)
        planned = self.as_dense
        travels = []
        for group in groups:
            # (a group's first task filters the problems its check pass passed)
            filt = stop if checks is not None and group[0] in checks else None
            travels.append((group, _steps.ring_order(group[0], K, laps),
                            operator.itemgetter(0), _worker.ring_task,
                            lambda i, filt=filt: (rnd, sweeps, i == 0, laps,
                                                  filt if i == 0 else None)))
        hops = [n for _, n in self._travels(travels)]
        if checks is None:
            return None
        sums = self._check_sums(checks)
        done = _steps.passed(sums, stop)
        passed = []
        for (start, problems), n in zip(groups, hops):
            # the passed problems' rows came with the check's sums (_worker.check_found)
            finished = [j for j in problems if j in done]
            for j in finished:
                del self.rows[j]
            eng.bytes["workers"] -= len(finished) * self.row_bytes * n
            if start in self.replica_runs:
                passed += finished
        give_up = eng.rules.sparse_give_up * planned
        if self.replica_runs and planned and self.as_sparse >= give_up:
            # the visits change most of the weights: finding which costs more than it
            # saves; the weights again, until the laps grow (smaller visits)
            self.rows, self.loc = self._copies(self.rows, self.loc, copy=False)
            self.replica_runs, self.latest, self.sparse_off = {}, {}, laps
            self.unpolled = True         # (the round sent with the check: changes too)
            # the replicas go once the copies have read them (tokens, not the weights)
            self._drop_replicas(None, [eng._on(self.loc[f.key], _worker.barrier, f)
                                       for f in self._payloads(self.rows)])
        elif passed:
            # (the round sent with the check leaves the passed problems out)
            self._drop_replicas(passed)
        return sums

    def check(self, groups, due=None):
        return self._check_sums(self._check_pass(groups, due))

    def _check_pass(self, groups, due=None, stop=None):
        """The check pass (``_steps.check_order``) of each group with problems in due
        (all when None): {start: (its last future, the future of what the client
        needs of it, the problems due)}; with ``stop``, what the client needs includes
        the rows of the problems that passed (final: they leave the workers)."""
        eng = self.eng
        K = len(eng.where)
        todo = [((start, problems), checked) for (start, problems), (_, checked)
                in zip(groups, _steps.checked_groups(groups, due)) if checked]
        ends = self._travels([(group, _steps.check_order(group[0], K), lambda p: p,
                               _worker.ring_check_task, lambda i, c=checked: (K, c))
                              for group, checked in todo])
        out = {}
        for ((start, _), checked), (fut, _) in zip(todo, ends):
            out[start] = (fut, eng._on(self.loc[fut.key], _worker.check_found, eng.job,
                                       fut, stop), checked)
        return out

    def _check_sums(self, checks):
        """The check result ({j: _steps.CheckResult}) of the passes."""
        eng = self.eng
        got = eng._gather([small for _, small, _ in checks.values()])
        eng._synced()
        self._received()
        self._finished([c.rows for c in got])
        per = _steps.found_by_partition([c.found for c in got], len(eng.where))
        stats = {}
        for c in got:
            stats.update(c.stats)
        problems = [j for _, _, checked in checks.values() for j in checked]
        return _steps.checked(per, stats, problems)


def _delivered(payload):
    """The payload, now on this worker (the sender's copy is released)."""
    return payload


def _start(inits, problems, spec):
    W = initial_weights(inits, problems, spec.d)
    return start_payload(W, spec)
