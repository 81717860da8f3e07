"""``python -m bench`` (``make bench``): the benchmarks of issue 8, in one run.

    python -m bench              # a few minutes: 3 interleaved rounds, 1k/100k/1M scale
    python -m bench --quick      # under a minute: 1 round, smaller sets, no 1M case
    python -m bench --only schedule,scale --rounds 1
    python -m bench --only binding  # experiment: Django's psycopg server-side binding on/off

Prints the table (Markdown), writes bench/results/latest.{json,md,png}. Scenarios that need a
part of the runtime that does not exist yet are reported as "not measured", never faked.
Every bench database is named ``ds_bench_<run id>_*`` and dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from bench import common, io, latency, peer, pgq, report, scale, schedules, seed, work

SCENARIOS = ("schedule", "scale", "work", "peer", "enqueue", "io", "latency")
#: Experiments run only when named in --only.
EXPERIMENTS = ("binding",)


@dataclass
class Config:
    mode: str
    rounds: int
    schedules: int
    sched_configs: tuple[tuple[int, int], ...]  # (processes, max_schedules)
    schedule_seconds: float
    scale_totals: tuple[int, ...]
    work_items: int
    workers: tuple[int, ...]
    work_seconds: float
    enqueue_n: int
    enqueue_batch: int
    io_items: int
    io_seconds: float
    latency_seconds: float
    latency_loads: tuple[int, ...]
    scale_impls: tuple[str, ...]


FULL = Config("full", 3, 10_000, tuple((p, b) for b in (1, 100) for p in (1, 2, 4)), 4.0,
              (1_000, 100_000, 1_000_000), 150_000, (1, 2, 4), 5.0, 1_000, 100, 1_500, 8.0,
              10.0, latency.LOADS, ("ours", "raw"))
QUICK = Config("quick", 1, 2_000, ((1, 1), (4, 100)), 1.0, (1_000, 100_000), 40_000, (1, 2, 4),
               1.5, 200, 100, 200, 3.0, 3.0, (latency.LOADS[-1],), ("ours",))


class Bench:
    def __init__(self, cfg: Config, only: set[str]) -> None:
        self.cfg = cfg
        self.only = only
        self.results: dict = {"schedule": [], "schedule_cron": [], "work": [], "enqueue": [],
                              "io": [],
                              "scale": [], "binding": [], "errors": []}
        self.caps: dict[str, bool] = {}
        self.lock = None  # the run's advisory-lock connection (common.hold_run_lock)

    def guarded(self, what: str, fn, *args):
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - one failed scenario must not hide the others
            common.log(f"{what} failed:\n{traceback.format_exc()}")
            self.results["errors"].append(f"{what}: {type(exc).__name__}: {exc}"[:300])
            return None

    def run(self) -> dict:
        cfg = self.cfg
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        t_start = time.monotonic()
        common.drop_stale_dbs(self.lock)
        common.log("migrating the bench template database (manage.py migrate)")
        common.migrated_template()
        self.caps = seed.build_prototypes()
        common.log(f"runtime parts available: {self.caps}")
        ours_sched = self.caps["process_due"] and self.caps["schedules_create"] \
            and self.caps["define"]
        ours_work = self.caps["work_pass"] and self.caps["define"]
        if "schedule" in self.only:
            self.schedule_scenario(ours_sched)
            if not self.caps.get("cron"):
                self.results["errors"].append(
                    "schedule cron variant: not measured (schedules.Cron is not in this "
                    "checkout)")
        if "work" in self.only or "peer" in self.only:
            self.work_scenario(ours_work and "work" in self.only, "peer" in self.only)
        if "enqueue" in self.only:
            self.enqueue_scenario(ours_work)
        if "io" in self.only:
            self.io_scenario(ours_work)
        if "scale" in self.only:
            self.scale_scenario(ours_sched)
        if "binding" in self.only and ours_sched and ours_work:
            self.binding_experiment()
        if "latency" in self.only:
            if ours_sched and ours_work:
                self.results["latency"] = self.guarded(
                    "latency", latency.measure_all, cfg.latency_seconds, cfg.latency_loads)
            else:
                self.results["errors"].append("latency: needs process_due and the Work pass")
        self.results["meta"] = {
            "started": started, "mode": cfg.mode, "rounds": cfg.rounds,
            "schedules": cfg.schedules, "work_items": cfg.work_items, "work_batch": work.BATCH,
            "duration_s": round(time.monotonic() - t_start, 1), "capabilities": self.caps,
            "python": sys.version.split()[0], "server": _server_version(),
            "commit": _commit(),
        }
        return self.results

    # -------------------------------------------------------------- scenarios
    def schedule_scenario(self, with_ours: bool) -> None:
        cfg = self.cfg
        common.log(f"schedule: seeding {cfg.schedules:,} due Every schedules")
        schedules.build_template(cfg.schedules)
        if not with_ours:
            self.results["errors"].append("schedule ours: process_due/schedules.create missing")
        for rnd in range(cfg.rounds):
            for procs, batch in cfg.sched_configs:
                impls = ["ours", "raw"] if with_ours else ["raw"]
                if batch > 1:
                    impls.append("raw_batched")
                if rnd % 2:
                    impls.reverse()
                for impl in impls:
                    out = self.guarded(f"schedule {impl} p{procs} b{batch}",
                                       schedules.run_config, impl, procs, batch,
                                       cfg.schedule_seconds, cfg.schedules)
                    if out:
                        self.results["schedule"].append(
                            {"impl": impl, "procs": procs, "batch": batch, "round": rnd,
                             **out})
                        common.log(f"schedule r{rnd} {impl:11} p{procs} b{batch:<3} "
                                   f"{out['rate']:8.0f}/s ({out['count']} in "
                                   f"{out['elapsed']:.1f}s, verified={out['verified']})")
        if with_ours and self.caps.get("cron"):
            self.cron_variant()
        common.drop_db(schedules.SEEDED_DB)

    def cron_variant(self) -> None:
        """Cost per occurrence of Cron against Every: the same due set (hourly on the hour),
        ours with 1 process x max_schedules 100, back to back per round."""
        cfg = self.cfg
        common.log(f"schedule: seeding {cfg.schedules:,} due Cron schedules")
        if self.guarded("cron seed", schedules.build_template, cfg.schedules,
                        seed.CRON_PROTOTYPE, schedules.CRON_DB) is None:
            return
        runs = [("every", schedules.SEEDED_DB), ("cron", schedules.CRON_DB)]
        for rnd in range(cfg.rounds):
            for kind, template in (runs if rnd % 2 == 0 else runs[::-1]):
                out = self.guarded(f"schedule cron variant {kind}", schedules.run_config, "ours",
                                   1, 100, cfg.schedule_seconds, cfg.schedules, template)
                if out:
                    self.results["schedule_cron"].append({"impl": kind, "round": rnd, **out})
                    common.log(f"schedule r{rnd} ours {kind:5} p1 b100 {out['rate']:8.0f}/s "
                               f"(verified={out['verified']}, {_per_item(out)} statements/item)")
        common.drop_db(schedules.CRON_DB)

    def work_scenario(self, with_ours: bool, with_peer: bool) -> None:
        cfg = self.cfg
        if with_ours:
            common.log(f"work: seeding {cfg.work_items:,} no-op Work")
            if self.guarded("work seed", work.build, cfg.work_items) is None:
                with_ours = False
        elif "work" in self.only:
            self.results["errors"].append("work ours: process_work_pass/work.define missing")
        with_pgq = with_peer
        if with_peer:
            common.log(f"peer: Procrastinate schema + {cfg.work_items:,} deferred jobs")
            if self.guarded("peer seed", peer.build, cfg.work_items) is None:
                with_peer = False
            common.log(f"peer: pgqueuer schema + {cfg.work_items:,} enqueued jobs")
            if self.guarded("pgqueuer seed", pgq.build, cfg.work_items) is None:
                with_pgq = False
        for rnd in range(cfg.rounds):
            for workers in cfg.workers:
                runs = ([("ours", work.run_workers)] if with_ours else []) + \
                       ([("procrastinate", peer.run_workers)] if with_peer else []) + \
                       ([("pgqueuer", pgq.run_workers)] if with_pgq else [])
                if rnd % 2:
                    runs.reverse()
                for impl, fn in runs:
                    out = self.guarded(f"work {impl} w{workers}", fn, workers,
                                       cfg.work_seconds)
                    if out:
                        # A run that finished every seeded item measured the seed, not the
                        # implementation: its rate is only a lower bound (the window, not the
                        # work, ended it). The seed is sized so that none does; the report
                        # names any that did.
                        out["drained"] = out["count"] >= cfg.work_items
                        if out["drained"]:
                            self.results.setdefault("caveats", []).append(
                                f"work {impl} w{workers} r{rnd}: all {cfg.work_items:,} seeded "
                                "items done inside the window; its rate is a lower bound")
                        self.results["work"].append(
                            {"impl": impl, "workers": workers, "round": rnd, **out})
                        common.log(f"work r{rnd} {impl:13} w{workers} {out['rate']:8.0f}/s "
                                   f"({out['count']} in {out['elapsed']:.1f}s, "
                                   f"{_per_item(out)} statements/item)")
        for name in (work.LOADED, peer.TEMPLATE, peer.LOADED, pgq.TEMPLATE, pgq.LOADED):
            common.drop_db(name)

    def enqueue_scenario(self, with_ours: bool) -> None:
        """Acceptance: one request per transaction and batches, ours and both peers, one
        process each, interleaved per round."""
        cfg = self.cfg
        if not cfg.enqueue_n:
            return
        with_many = with_ours and self.guarded("enqueue_many probe", work.has_enqueue_many)
        if with_ours and not with_many:
            self.results["errors"].append("enqueue_many ours: work.enqueue_many missing")
        # Each system accepts into a copy of its own loaded store (rows + VACUUM ANALYZE), the
        # state a running installation is in (docs/benchmarks.md "History").
        n, b, many_n = cfg.enqueue_n, cfg.enqueue_batch, cfg.enqueue_n * 10
        if with_ours and self.guarded("enqueue seed", work.build, many_n) is None:
            with_ours = with_many = False
        with_pc = self.guarded("procrastinate seed", peer.build, many_n) is not None
        with_pq = self.guarded("pgqueuer seed", pgq.build, many_n) is not None
        # ours in both forms (docs/benchmarks.md Method, "6. Acceptance"): "ours" standalone,
        # each call its own autocommit statement like the peers' calls; "ours_atomic" inside
        # transaction.atomic(), the form with a business write (BEGIN, statement, COMMIT).
        plan = ([("ours", 1, work.enqueue_rate, n),
                 ("ours_atomic", 1, work.enqueue_atomic_rate, n)] if with_ours else []) \
            + ([("ours", b, work.enqueue_rate, many_n),
                ("ours_atomic", b, work.enqueue_atomic_rate, many_n)] if with_many else []) \
            + ([("procrastinate", 1, peer.defer_rate, n),
                ("procrastinate", b, peer.defer_rate, many_n)] if with_pc else []) \
            + ([("pgqueuer", 1, pgq.enqueue_rate, n),
                ("pgqueuer", b, pgq.enqueue_rate, many_n)] if with_pq else [])
        for rnd in range(cfg.rounds):
            for impl, batch, fn, count in (plan if rnd % 2 == 0 else plan[::-1]):
                out = self.guarded(f"enqueue {impl} batch {batch}", fn, count, batch)
                if out:
                    self.results["enqueue"].append(
                        {"impl": impl, "batch": batch, "round": rnd, **out})
                    common.log(f"enqueue r{rnd} {impl:13} batch {batch:<3} "
                               f"{out['rate']:8.0f}/s ({_per_item(out)} statements/item)")
        for name in (work.LOADED, peer.TEMPLATE, peer.LOADED, pgq.TEMPLATE, pgq.LOADED):
            common.drop_db(name)

    def io_scenario(self, with_ours: bool) -> None:
        """I/O-bound Work (50 ms sleep), one process at concurrency 20, ours and Procrastinate."""
        cfg = self.cfg
        has_option = with_ours and self.guarded("io probe", io.available)
        if not has_option:
            self.results["errors"].append(
                "io ours: not available (this checkout's process_work has no --concurrency)")
        elif self.guarded("io seed", io.build, cfg.io_items) is None:
            has_option = False
        with_peer = self.guarded("io peer schema", peer.build_schema) is not None and \
            self.guarded("io peer seed", io.build_peer, cfg.io_items) is not None
        runs = ([("ours", io.run_ours, cfg.io_items)] if has_option else []) + \
               ([("procrastinate", io.run_peer, cfg.io_seconds)] if with_peer else [])
        for rnd in range(cfg.rounds):
            for impl, fn, arg in (runs if rnd % 2 == 0 else runs[::-1]):
                out = self.guarded(f"io {impl}", fn, arg)
                if out:
                    self.results["io"].append({"impl": impl, "round": rnd,
                                               "concurrency": io.CONCURRENCY, **out})
                    common.log(f"io r{rnd} {impl:13} c{io.CONCURRENCY} {out['rate']:8.0f}/s "
                               f"({out['count']} in {out['elapsed']:.1f}s, "
                               f"{_per_item(out)} statements/item)")
        for name in (io.LOADED, peer.TEMPLATE, peer.SLEEP_LOADED):
            common.drop_db(name)

    def binding_experiment(self) -> None:
        """Ours with Django's default client-side binding against ``server_side_binding``
        (psycopg then prepares a statement after 5 executions on a connection)."""
        cfg = self.cfg
        schedules.build_template(cfg.schedules)
        work.build(cfg.work_items)
        for rnd in range(cfg.rounds):
            for mode in (("0", "1") if rnd % 2 == 0 else ("1", "0")):
                os.environ["BENCH_SERVER_SIDE_BINDING"] = mode
                try:
                    name = "server_side_binding" if mode == "1" else "default"
                    for what, fn, args in (
                            ("schedule p1 b100", schedules.run_config,
                             ("ours", 1, 100, cfg.schedule_seconds, cfg.schedules)),
                            ("work w1", work.run_workers, (1, cfg.work_seconds))):
                        out = self.guarded(f"binding {name} {what}", fn, *args)
                        if out:
                            self.results["binding"].append(
                                {"impl": name, "what": what, "round": rnd, **out})
                            common.log(f"binding r{rnd} {name:19} {what:16} "
                                       f"{out['rate']:7.0f}/s")
                finally:
                    os.environ.pop("BENCH_SERVER_SIDE_BINDING", None)
        common.drop_db(schedules.SEEDED_DB)
        common.drop_db(work.LOADED)

    def scale_scenario(self, with_ours: bool) -> None:
        cfg = self.cfg
        impls = [i for i in cfg.scale_impls if with_ours or i != "ours"] or ["raw"]
        totals = []
        for total in cfg.scale_totals:
            common.log(f"scale: loading {total:,} schedules (1,000 due)")
            if self.guarded(f"scale build {total}", scale.build, total) is not None:
                totals.append(total)
        for rnd in range(cfg.rounds):
            for total in (totals if rnd % 2 == 0 else totals[::-1]):
                for impl in (impls if rnd % 2 == 0 else impls[::-1]):
                    out = self.guarded(f"scale {impl} {total}", scale.measure, impl, total)
                    if out:
                        self.results["scale"].append(
                            {"impl": impl, "total": total, "round": rnd, **out})
                        common.log(f"scale r{rnd} {impl:4} {total:>9,}: claim "
                                   f"{out['claim_ms']:.2f} ms, pass {out['pass_ms']:.1f} ms")
        if totals:
            self.results["explain"] = self.guarded("explain", scale.explain, max(totals))
            self.results["explain_total"] = max(totals)
        for total in totals:
            common.drop_db(scale.loaded_db(total))


def _per_item(out: dict) -> str:
    v = out.get("statements_per_item")
    return "?" if v is None else f"{v:.2f}"


def _commit() -> str:
    """HEAD of the work tree, with "+dirty" when the runtime had uncommitted changes."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=common.ROOT, capture_output=True, text=True,
                              timeout=30)
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "durable_schedule")
    except (OSError, subprocess.SubprocessError):
        return "?"
    return head + ("+dirty" if dirty else "")


def _server_version() -> str:
    with common.admin_connect() as conn:
        return conn.execute("show server_version").fetchone()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="under a minute: smaller, 1 round")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--only", default=",".join(SCENARIOS),
                        help=f"comma-separated subset of {','.join(SCENARIOS + EXPERIMENTS)}")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results",
                        help="folder for latest.json / latest.md / latest.png")
    parser.add_argument("--sched-configs", default=None, metavar="PxN[,PxN...]",
                        help="schedule scenario configurations: processes x max_schedules "
                             "(e.g. 1x100,2x100)")
    parser.add_argument("--work-batch", type=int, default=None, metavar="N",
                        help="largest claim of ours and pgqueuer's batch_size in the Work "
                             "scenario, equal by construction (default: the runtime's default "
                             "largest claim, durable_schedule.work.sizing.DEFAULT_MAX_BATCH)")
    parser.add_argument("--schedule-batch", type=int, default=None, metavar="N",
                        help="DURABLE_SCHEDULE['SCHEDULE_BATCH'] in ours (1: one transaction "
                             "per schedule; default: the runtime's)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.rounds is not None:
        cfg.rounds = max(1, args.rounds)
    if args.sched_configs:
        try:
            cfg.sched_configs = tuple(tuple(int(x) for x in part.split("x"))
                                      for part in args.sched_configs.split(","))
        except ValueError:
            parser.error("--sched-configs takes PxN pairs, e.g. 1x100,2x100")
    if args.work_batch is not None:
        if not 1 <= args.work_batch <= 1000:
            parser.error("--work-batch takes 1..1000 (the claim's limit)")
        os.environ["BENCH_WORK_BATCH"] = str(args.work_batch)  # read by bench.work, children
        work.BATCH = pgq.BATCH = args.work_batch
    if args.schedule_batch is not None:
        os.environ["BENCH_SCHEDULE_BATCH"] = str(args.schedule_batch)  # read by the children
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(SCENARIOS + EXPERIMENTS)
    if unknown:
        parser.error(f"unknown scenarios: {sorted(unknown)}")
    bench = Bench(cfg, only)
    bench.lock = common.hold_run_lock()
    try:
        results = bench.run()
    finally:
        for name in common.list_bench_dbs():
            common.drop_db(name)
        bench.lock.close()
    paths = report.write(results, args.out)
    s = report.summarize(results)
    print(report.table(results, s))
    for line in report.targets(s):
        print(f"- {line}")
    print(f"\nwritten: {', '.join(str(p) for p in paths.values())} "
          f"({results['meta']['duration_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
