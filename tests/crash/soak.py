"""The randomized crash soak (docs/reliability.md "Soak").

Four worker slots run ``process_schedules`` and ``process_work`` subprocesses over a set of
schedules and their Work, in waves. Between waves (never during one) the controlled clock moves
forward: instants come due and the leases of processes that died expire. During a wave the
faults of a seeded plan are injected:

* a subprocess is armed at a random named barrier (``DURABLE_SCHEDULE_CRASH_AT``) and dies there
  with exit code 86 the first time it reaches it;
* a random live subprocess's database connections are terminated (``pg_terminate_backend``);
* a random live subprocess is killed with SIGKILL at a random moment (a crash anywhere, not only
  at a barrier).

After the last wave, recovery runs in the test process with no barrier armed
(:func:`tests.crash.passes.settle`) and the invariants of :mod:`tests.crash.invariants` are
checked over the whole store.

The seed fixes the plan: the schedules, every wave's clock step, each spawn's command and barrier,
and each fault's kind, target slot and moment. The interleaving of the four processes (and so
exactly which row a fault hits) is the operating system's: a seed reproduces the plan, not the
thread schedule. ``plan_digest`` in the figures identifies the plan.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

import psycopg
from django.db import transaction

from durable_schedule import barriers, schedules
from tests.conftest import T0, database_url
from tests.crash import harness, invariants, passes
from tests.crash.harness import SCHEDULES, WORK

MINUTE = timedelta(minutes=1)
APP_PREFIX = "durable-soak"
SPAWN_TIMEOUT = 90.0
#: Signs, in a subprocess's stderr, that its database connection was taken away (accepted only
#: from a process whose backend the soak terminated).
CONNECTION_LOST = (
    "terminating connection due to administrator command",
    "server closed the connection",
    "connection is closed",
    "the connection is closed",
    "consuming input failed",
    "connection already closed",
    "SSL connection has been closed",
    "no connection to the server",
    "connection to server",
    "the connection is lost",
    "OperationalError",
    "InterfaceError",
)
#: Signs of a broken protocol, never acceptable even in a faulted process.
PROTOCOL_BROKEN = ("DS113", "OccurrenceLinkConflict", "IntegrityError", "UniqueViolation",
                   "duplicate key")


@dataclass(frozen=True)
class Size:
    schedules: int
    scopes: int
    waves: int
    spawns_per_slot: int
    slots: int = 4
    #: Wall-clock bound: no new wave starts after this many seconds, once ``min_waves`` ran.
    budget_seconds: float = 60.0
    min_waves: int = 4
    arm_probability: float = 0.35
    terminates_per_wave: tuple[int, int] = (1, 3)
    sigkills_per_wave: tuple[int, int] = (0, 1)


CI = Size(schedules=200, scopes=8, waves=12, spawns_per_slot=2, budget_seconds=40.0)
LONG = Size(schedules=2000, scopes=20, waves=20, spawns_per_slot=3, budget_seconds=1200.0)


@dataclass(frozen=True)
class Spawn:
    command: str
    barrier: str | None


@dataclass(frozen=True)
class Fault:
    """Hit the ``spawn``-th process of ``slot`` ``delay`` seconds after its first database
    activity (a query running or a transaction open): ``terminate`` its backends, or
    ``sigkill`` the process."""

    slot: int
    spawn: int
    kind: str
    delay: float


@dataclass(frozen=True)
class Wave:
    step_minutes: int
    spawns: tuple[tuple[Spawn, ...], ...]  # per slot
    faults: tuple[Fault, ...]


@dataclass(frozen=True)
class ScheduleSpec:
    scope: str
    schedule_id: str
    kind: str
    minutes: int
    anchor_minutes: int | None
    work: str  # "invoice" | "touch"


def make_plan(seed: int, size: Size) -> tuple[list[ScheduleSpec], list[Wave]]:
    rng = random.Random(seed)
    specs = []
    for i in range(size.schedules):
        roll = rng.random()
        kind = "every" if roll < 0.8 else ("after" if roll < 0.9 else "at")
        if kind == "every":
            minutes = rng.choice((5, 7, 10, 15, 20))
            anchor = rng.choice((None, rng.randrange(0, minutes)))
        else:
            minutes, anchor = rng.randint(3, 40), None
        work = "invoice" if rng.random() < 0.75 else "touch"
        specs.append(ScheduleSpec(f"soak-{i % size.scopes}", f"s-{i:05d}", kind, minutes, anchor,
                                  work))
    waves = []
    for _ in range(size.waves):
        per_slot = []
        for _slot in range(size.slots):
            spawns = []
            for _k in range(size.spawns_per_slot):
                command = rng.choice((SCHEDULES, WORK))
                barrier = None
                if rng.random() < size.arm_probability:
                    choices = harness.SCHEDULE_BARRIERS if command == SCHEDULES \
                        else harness.WORK_BARRIERS
                    barrier = rng.choice(choices)
                spawns.append(Spawn(command, barrier))
            per_slot.append(tuple(spawns))
        faults = []
        for kind, bounds in (("terminate", size.terminates_per_wave),
                             ("sigkill", size.sigkills_per_wave)):
            for _ in range(rng.randint(*bounds)):
                faults.append(Fault(rng.randrange(size.slots), rng.randrange(size.spawns_per_slot),
                                    kind, round(rng.uniform(0.0, 0.6), 3)))
        waves.append(Wave(rng.randint(2, 6), tuple(per_slot), tuple(faults)))
    return specs, waves


def plan_digest(specs, waves) -> str:
    text = json.dumps([[asdict(s) for s in specs], [asdict(w) for w in waves]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def create_schedules(specs: list[ScheduleSpec], definitions: dict) -> None:
    with transaction.atomic():
        for n, s in enumerate(specs):
            if s.kind == "every":
                anchor = None if s.anchor_minutes is None else T0 + s.anchor_minutes * MINUTE
                spec = schedules.Every(s.minutes * MINUTE, anchor=anchor)
            elif s.kind == "after":
                spec = schedules.After(s.minutes * MINUTE)
            else:
                spec = schedules.At(T0 + s.minutes * MINUTE)
            schedules.create(s.scope, s.schedule_id, spec,
                             definitions[s.work].target(payload={"order": n}))


@dataclass
class Figures:
    seed: int
    mode: str
    plan_digest: str
    schedules: int
    slots: int
    waves_planned: int
    waves_run: int = 0
    processes_spawned: int = 0
    spawned_by_command: Counter = field(default_factory=Counter)
    armed: int = 0
    killed_at_barrier: Counter = field(default_factory=Counter)
    armed_not_reached: int = 0
    sigkills_sent: int = 0
    sigkilled: int = 0
    backends_terminated: int = 0
    processes_hit_by_terminate: int = 0
    died_of_terminate: int = 0
    survived_terminate: int = 0
    exits: Counter = field(default_factory=Counter)
    unexpected: list = field(default_factory=list)
    faults_missed: int = 0
    simulated_minutes_in_waves: float = 0.0
    occurrences_before_recovery: int = 0
    works_before_recovery: int = 0
    works_succeeded_before_recovery: int = 0
    recovery: dict = field(default_factory=dict)
    final_simulated_minutes: float = 0.0
    invariants: dict = field(default_factory=dict)
    wall_seconds: dict = field(default_factory=dict)
    finished_at: str = ""

    @property
    def processes_killed(self) -> int:
        return sum(self.killed_at_barrier.values()) + self.sigkilled

    def as_json(self) -> dict:
        data = asdict(self)
        for key in ("spawned_by_command", "killed_at_barrier", "exits"):
            data[key] = dict(sorted(getattr(self, key).items()))
        data["processes_killed"] = self.processes_killed
        data["faults_injected"] = (sum(self.killed_at_barrier.values()) + self.sigkilled
                                   + self.backends_terminated)
        data["unexpected"] = self.unexpected[:20]
        return data


class _Slot(threading.Thread):
    """Runs one slot's spawns of one wave, one after another, with their planned faults."""

    def __init__(self, wave_no: int, slot: int, spawns: tuple[Spawn, ...],
                 faults: list[Fault], figures: Figures, lock: threading.Lock) -> None:
        super().__init__(name=f"soak-slot-{slot}", daemon=True)
        self.wave_no, self.slot, self.spawns, self.faults = wave_no, slot, spawns, faults
        self.figures, self.lock = figures, lock

    def run(self) -> None:
        for k, spawn in enumerate(self.spawns):
            app = f"{APP_PREFIX}-{self.wave_no}-{self.slot}-{k}"
            if spawn.command == SCHEDULES:
                args = ("--lease-seconds", str(harness.LEASE_SECONDS), "--max-schedules",
                        "5000", "--claim-batch", "10", "--passes", "3", "-v", "0")
            else:
                args = (*harness.DEFAULT_ARGS[WORK], "-v", "0")
            proc = harness.start(spawn.command, *args, crash_at=spawn.barrier, app=app)
            injectors = [_Injector(proc, app, fault, self.figures, self.lock)
                         for fault in self.faults if fault.spawn == k]
            for injector in injectors:
                injector.start()
            try:
                _out, err = proc.communicate(timeout=SPAWN_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                _out, err = proc.communicate()
                err += "\n[soak] timed out and killed by the harness"
            for injector in injectors:
                injector.join(timeout=10)
            with self.lock:
                self._classify(spawn, app, proc.returncode, err, injectors)

    def _classify(self, spawn: Spawn, app: str, code: int, err: str, injectors) -> None:
        f = self.figures
        f.processes_spawned += 1
        f.spawned_by_command[spawn.command] += 1
        f.exits[str(code)] += 1
        if spawn.barrier:
            f.armed += 1
        reached = None
        for line in err.splitlines():
            if "crash barrier" in line and "reached" in line:
                reached = line.split("crash barrier", 1)[1].split()[0]
        broken = [m for m in PROTOCOL_BROKEN if m in err]
        terminated = any(i.done == "terminate" for i in injectors)
        killed = any(i.done == "sigkill" for i in injectors)
        if terminated:
            f.processes_hit_by_terminate += 1
        if code == barriers.CRASH_EXIT_CODE and reached == spawn.barrier:
            f.killed_at_barrier[spawn.barrier] += 1
        elif code == -9 and killed:
            f.sigkilled += 1
        elif code == 0:
            if spawn.barrier:
                f.armed_not_reached += 1
            if terminated:
                f.survived_terminate += 1  # the runner's bounded transient retry took over
        elif terminated and any(m in err for m in CONNECTION_LOST):
            f.died_of_terminate += 1  # its connection was taken away: a fault we injected
        else:
            broken = broken or ["unexpected exit"]
        if broken:
            f.unexpected.append({"app": app, "command": spawn.command, "barrier": spawn.barrier,
                                 "exit": code, "why": broken, "stderr": err[-1500:]})


class _Injector(threading.Thread):
    """Waits for a subprocess's first database activity, then the fault's delay, then hits."""

    POLL = 0.01
    PATIENCE = 15.0

    def __init__(self, proc: subprocess.Popen, app: str, fault: Fault, figures: Figures,
                 lock: threading.Lock) -> None:
        super().__init__(name=f"soak-fault-{app}", daemon=True)
        self.proc, self.app, self.fault = proc, app, fault
        self.figures, self.lock = figures, lock
        self.done: str | None = None

    def run(self) -> None:
        with psycopg.connect(database_url(), autocommit=True,
                             application_name="durable-soak-injector") as conn:
            deadline = time.monotonic() + self.PATIENCE
            while self.proc.poll() is None and time.monotonic() < deadline:
                busy = conn.execute(
                    "select count(*) from pg_stat_activity where datname = current_database()"
                    " and application_name = %s"
                    " and state in ('active', 'idle in transaction')", (self.app,)).fetchone()[0]
                if busy:
                    break
                time.sleep(self.POLL)
            time.sleep(self.fault.delay)  # a fault-injection moment, not protocol time
            if self.proc.poll() is not None:
                with self.lock:
                    self.figures.faults_missed += 1
                return
            if self.fault.kind == "sigkill":
                self.proc.kill()  # our own subprocess, by its handle
                self.done = "sigkill"
                with self.lock:
                    self.figures.sigkills_sent += 1
                return
            n = conn.execute(
                "select count(*) filter (where pg_terminate_backend(pid)) from pg_stat_activity"
                " where datname = current_database() and application_name = %s",
                (self.app,)).fetchone()[0]
            with self.lock:
                if n:
                    self.done = "terminate"
                    self.figures.backends_terminated += n
                else:
                    self.figures.faults_missed += 1


def run_wave(wave_no: int, wave: Wave, figures: Figures) -> None:
    lock = threading.Lock()
    slots = [_Slot(wave_no, n, spawns, [f for f in wave.faults if f.slot == n], figures, lock)
             for n, spawns in enumerate(wave.spawns)]
    for s in slots:
        s.start()
    for s in slots:
        s.join(timeout=SPAWN_TIMEOUT * (len(s.spawns) + 1))
        assert not s.is_alive(), f"slot {s.slot} of wave {wave_no} did not finish"


def count(sql: str) -> int:
    return invariants.rows(sql)[0][0]


def run_soak(clock, seed: int, size: Size, mode: str,
             definitions: dict) -> tuple[Figures, invariants.Report]:
    t_start = time.monotonic()
    specs, waves = make_plan(seed, size)
    figures = Figures(seed=seed, mode=mode, plan_digest=plan_digest(specs, waves),
                      schedules=size.schedules, slots=size.slots, waves_planned=len(waves))
    clock.set(T0)
    create_schedules(specs, definitions)
    t_created = time.monotonic()
    for n, wave in enumerate(waves):
        if n >= size.min_waves and time.monotonic() - t_start > size.budget_seconds:
            break
        clock.advance(wave.step_minutes * MINUTE)
        run_wave(n, wave, figures)
        figures.waves_run += 1
    t_waves = time.monotonic()
    figures.simulated_minutes_in_waves = (clock.now - T0) / MINUTE
    figures.occurrences_before_recovery = count("select count(*) from durable_schedule_occurrence")
    figures.works_before_recovery = count("select count(*) from durable_work")
    figures.works_succeeded_before_recovery = count(
        "select count(*) from durable_work where state = 'succeeded'")
    # Recovery, no barrier armed, no fault: first every dead holder's lease expires.
    clock.advance(MINUTE + timedelta(seconds=1))
    settled = passes.settle(clock, max_rounds=5000)
    figures.recovery = {"rounds": settled.rounds, "clock_jumps": settled.clock_jumps,
                        "schedules_claimed": settled.schedules_claimed,
                        "work_claimed": settled.work_claimed,
                        "operator_proofs": settled.proofs}
    figures.final_simulated_minutes = (clock.now - T0) / MINUTE
    t_settled = time.monotonic()
    report = invariants.check(settled=True)
    figures.invariants = report.summary()
    t_end = time.monotonic()
    figures.wall_seconds = {"create": round(t_created - t_start, 2),
                            "waves": round(t_waves - t_created, 2),
                            "recovery": round(t_settled - t_waves, 2),
                            "check": round(t_end - t_settled, 2),
                            "total": round(t_end - t_start, 2)}
    figures.finished_at = datetime.now().astimezone().isoformat(timespec="seconds")
    return figures, report
