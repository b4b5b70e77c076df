"""Pre-started confined processes, so that isolation does not cost a start-up per candidate.

A runner or a reference worker spends most of its start on the interpreter and ``import torch``
(seconds on a loaded 2-core machine), all of it before any candidate code and identical for every
verification of the same backend and thread budget. The pool keeps ``size`` booted spares per kind
(verifier.monitor.sites: confined, seccomp on, waiting for work) and starts the replacements once the
taken ones are ready (:meth:`Pool.replenish`), so that start-ups never compete with each other. A
spare is used once: a runner that has seen a candidate is never reused.

:meth:`Pool.paused` stops the spares still booting while the latency phase times: a spare's start-up
never shares the cores with a timed call, and is not waited for either.

A reference worker never sees candidate code, so one that a verification released cleanly
(verifier.monitor.reference.Reference.release) is held (:meth:`Pool.keep`) and serves the next
verification of the same task (a campaign's drafts and refinements of one task, a test's candidates
for one task) without a start-up; a fresh spare stays booted for any other task.

Once a task is verified again and again (its worker kept a second time), the held worker is primed:
it is handed the next verification's task and secret seeds at once (a fresh master seed, or the
settings' fixed one) and computes that verification's reference trials while the campaign asks its
LLM for the next candidate. The verification that comes for it takes its seed (:meth:`Pool.primed_seed`)
and the worker with its trials (:meth:`Pool.take_primed`): 1.5-2 s of reference work at the bundled
sizes no longer waited for. One worker is primed at a time, and only where the trials it holds in the
monitor stay under :data:`PRIMED_BYTES`; a primed worker still computing is stopped in :meth:`paused`
blocks like a booting spare.
"""

from __future__ import annotations

import atexit
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from verifier.monitor.freeze import hold, release
from verifier.monitor.reference import Reference
from verifier.monitor.sites import ReferenceSite, RunnerSite, RunnerSpec
from verifier.sandbox import messages as msg

USED_MOST = 2  # reference workers held for reuse (each holds what its task's model left in its heap)
PRIMED_BYTES = 1 << 30  # reference trials a primed worker's verification may hold in the monitor
PRIMED_S = 3600.0  # a primed worker's trials are collected for this long (stopped in paused() blocks meanwhile)


@dataclass(frozen=True)
class Primed:
    """A held reference worker computing the trials of the verification expected next (:meth:`Pool.keep`)."""

    site: ReferenceSite
    seed: int  # that verification's master seed
    secret: bool  # a fresh secret seed (else the settings' fixed one: offered to no verification that asks)
    start: msg.RefStart
    reference: Reference


class Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runners: dict[RunnerSpec, list[RunnerSite]] = {}
        self._references: dict[tuple[int, int, bool], list[ReferenceSite]] = {}
        self._used: list[tuple[tuple[int, int, bool, str], ReferenceSite]] = []  # released by verifications, oldest first
        self._paused: dict[int, int] = {}  # pid of a spare stopped by paused() -> how many blocks hold it
        self._primed: dict[tuple[int, int, bool, str], Primed] = {}  # at most one
        self._kept: dict[tuple[int, int, bool, str], int] = {}  # how often a worker was kept, per key
        atexit.register(self.close)

    def runner(self, spec: RunnerSpec, size: int) -> RunnerSite:
        with self._lock:
            spares = [s for s in self._runners.pop(spec, []) if s.process.alive()]
            site = spares.pop(0) if spares else None
            self._runners[spec] = spares
        if site is None:
            return RunnerSite(spec)
        self._resume(site)
        return site

    def replenish(self, spec: RunnerSpec, threads: int, memory_mb: int, devices: bool, size: int) -> None:
        """Start the spares of a runner and a reference worker like the ones just taken (called once the
        taken ones are ready, so that their start-ups do not compete)."""
        self._refill(self._runners, spec, size, lambda: RunnerSite(spec))
        key = (threads, memory_mb, devices)
        self._refill(self._references, key, size, lambda: ReferenceSite(threads, memory_mb, devices))

    def reference(self, threads: int, memory_mb: int, devices: bool, size: int, task: str = "") -> ReferenceSite:
        """A reference worker: the one the last verification of ``task`` released (:meth:`keep`), else a
        booted spare, else a new one."""
        key = (threads, memory_mb, devices)
        with self._lock:
            found = [i for i, (k, _) in enumerate(self._used) if task and k == (*key, task)]
            used = self._used.pop(found[-1])[1] if found else None
        if used is not None and used.process.alive():
            return used
        if used is not None:
            used.close()
        with self._lock:
            spares = [s for s in self._references.pop(key, []) if s.process.alive()]
            site = spares.pop(0) if spares else None
            self._references[key] = spares
        if site is None:
            return ReferenceSite(threads, memory_mb, devices)
        self._resume(site)
        return site

    def keep(self, site: ReferenceSite, key: tuple[int, int, bool, str],
             prime: Callable[[], tuple[int, bool, msg.RefStart]] | None = None) -> None:
        """Hold a reference worker a verification released, under ``key`` (threads, memory, devices, task:
        :meth:`reference`'s arguments), for the next one of the same task (its start-up saved: ~1.3 s of
        CPU); the :data:`USED_MOST` most recent are held. ``prime``: the master seed (and whether it is a fresh
        secret one) and RefStart of the task's next verification, for a worker kept for its task before (it
        is primed with them)."""
        with self._lock:
            again = self._kept.get(key, 0) > 0
            self._kept[key] = self._kept.get(key, 0) + 1
        if prime is not None and again:
            seed, secret, start = prime()
            primed = Primed(site, seed, secret, start, Reference(site.process, start, time.monotonic() + PRIMED_S))
            with self._lock:
                dropped, self._primed = list(self._primed.values()), {key: primed}
            for old in dropped:
                self._close(old)
            return
        with self._lock:
            self._used.append((key, site))
            dropped, self._used = self._used[:-USED_MOST], self._used[-USED_MOST:]
        for _, old in dropped:
            old.close()

    def primed_seed(self, key: tuple[int, int, bool, str]) -> int | None:
        """The fresh secret master seed a worker was primed with for ``key``'s next verification (None: none
        is, or it was primed under a fixed seed)."""
        with self._lock:
            primed = self._primed.get(key)
        return primed.seed if primed is not None and primed.secret else None

    def take_primed(self, key: tuple[int, int, bool, str], start: msg.RefStart) -> Primed | None:
        """The worker primed for ``key`` where it was handed exactly ``start`` and is still sound; a primed
        worker that does not fit is closed."""
        with self._lock:
            primed = self._primed.pop(key, None)
        if primed is None:
            return None
        if primed.start != start or primed.reference.error or not primed.site.process.alive():
            self._close(primed)
            return None
        self._resume(primed.site)
        return primed

    def _close(self, primed: Primed) -> None:
        """A primed worker closed: continued if a paused() block stopped it, its reader ended first."""
        self._resume(primed.site)
        primed.reference.detach()
        primed.site.close()

    def _refill(self, table: dict, key, size: int, make) -> None:
        """Keep ``size`` spares for ``key``; spares booted for any other key are closed (a process keeps
        spares for the kind of verification it ran last, not for every kind it ever ran)."""
        with self._lock:
            stale = [s for other, spares in table.items() if other != key for s in spares]
            for other in [k for k in table if k != key]:
                del table[other]
        for site in stale:
            self._resume(site)  # its pid forgotten by any paused block before it is gone
            site.close()
        while True:
            with self._lock:
                if len(table.get(key, [])) >= size:
                    return
            site = make()
            with self._lock:
                table.setdefault(key, []).append(site)

    @contextmanager
    def paused(self) -> Iterator[int]:
        """Every spare still booting stopped inside the block (SIGSTOP, verifier.monitor.freeze) and
        continued after it; yields how many. The latency phase times inside it: no start-up shares the
        cores with a timed window, and none is waited for (the runner's boot went on through the
        window before: 0.7-0.8 s a verification on a quiet machine, 1.2-2.1 s at load 5). A campaign's
        next LLM call hides the rest of the boot; a monitor that dies meanwhile takes its stopped
        spares along (verifier.sandbox.launcher watches it). Blocks may overlap (verifications in
        threads): a spare is continued when the last block holding it ends, or when a verification
        takes it (:meth:`_resume`)."""
        with self._lock:
            booting = [s for s in self._held() if s.ready is None and s.process is not None] + \
                [p.site for p in self._primed.values() if not p.reference.done()]
        found = [(site, site.process.pid()) for site in booting]
        with self._lock:  # a spare taken since (its process's pid read outside the lock) is not stopped
            held = self._held()
            pids = [pid for site, pid in found if pid > 0 and any(site is h for h in held)]
            for pid in pids:
                self._paused[pid] = self._paused.get(pid, 0) + 1
        try:
            for pid in pids:
                with self._lock:  # a take in between continues the spare (:meth:`_resume`) and unregisters it:
                    if pid in self._paused:  # stopping it now would leave it stopped under its verification
                        hold(pid)
            yield len(pids)
        finally:
            done = []
            with self._lock:
                for pid in pids:
                    blocks = self._paused.get(pid)
                    if blocks is None:  # taken meanwhile, and continued then
                        continue
                    if blocks > 1:
                        self._paused[pid] = blocks - 1
                    else:
                        del self._paused[pid]
                        done.append(pid)
            for pid in done:
                release(pid)

    def _resume(self, site) -> None:
        """A spare a verification takes (or the pool closes) is continued if a :meth:`paused` block
        stopped it (whose pid is known by then)."""
        pid = site.process.known_pid() if site.process is not None else 0
        with self._lock:
            stopped = self._paused.pop(pid, None) is not None
        if stopped:
            release(pid)

    def _held(self) -> list:
        """Every spare held now (call with the lock held)."""
        return [s for spares in (*self._runners.values(), *self._references.values()) for s in spares] + \
            [site for _, site in self._used] + [p.site for p in self._primed.values()]

    def spare_launcher_pids(self) -> set[int]:
        """The launcher pids of the spares held now (processes that saw no candidate yet)."""
        with self._lock:
            sites = self._held()
        return {s.process.proc.pid for s in sites}

    def close(self) -> None:
        with self._lock:
            primed, self._primed = list(self._primed.values()), {}
            sites = self._held()
            self._runners, self._references, self._used = {}, {}, []
        for old in primed:
            self._close(old)
        for site in sites:
            self._resume(site)
            site.close()


POOL = Pool()
