"""The PostgreSQL server restarted under a running ``process_work --loop --concurrency 4``:
first ``pg_ctl restart -m fast`` (clients are disconnected, 57P01), then ``-m immediate`` (the
postmaster kills every backend, crash recovery on start-up), each while items run. A private
cluster is initialised for it (the shared server is never restarted); the test is skipped only
when the PostgreSQL server binaries are absent. Every item must succeed exactly once by the
effects ledger, no dispatch row may be left, the loop keeps running and SIGTERM exits 0."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.runner.loophelpers import ROOT, stop, wait_until

pytestmark = pytest.mark.crash

BIN = Path(os.environ.get("DURABLE_PG_BIN", "/usr/lib/postgresql/15/bin"))
ITEMS = 8


def _free_port() -> tuple[int, int]:
    """A port in 5560-5569 (outside the ephemeral range, so no client socket takes it while the
    server restarts), reserved with a lock file that is held while the cluster lives: test runs
    side by side (tox environments run two at a time) never pick the same port."""
    for port in range(5560, 5570):
        lock = Path(tempfile.gettempdir()) / f"durable_fix12a_port_{port}.lock"
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                os.close(fd)
                continue
        return port, fd
    pytest.skip("no free port in 5560-5569 for a private PostgreSQL cluster")


class Cluster:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="fix12a_"))
        self.port, self.port_lock = _free_port()
        # initdb and postgres refuse to run as root: run them as the postgres OS user then.
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.dir, "postgres")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/durable"

    def run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, text=True)

    def ctl(self, *args: str) -> None:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.run(
            str(BIN / "pg_ctl"),
            "-D",
            str(self.dir / "data"),
            "-l",
            str(self.dir / "log"),
            "-w",
            "-o",
            opts,
            *args,
        )

    def sql(self, query: str, params=()):
        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else []


@pytest.fixture
def cluster():
    if not (BIN / "initdb").exists() or not (BIN / "pg_ctl").exists():
        pytest.skip(f"PostgreSQL server binaries not found in {BIN}")
    c = Cluster()
    try:
        c.run(str(BIN / "initdb"), "-U", "postgres", "-A", "trust", "-D", str(c.dir / "data"))
        c.ctl("start")
        try:
            with psycopg.connect(c.url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
                conn.execute("create database durable")
            manage("migrate", "-v0", url=c.url)
            yield c
        finally:
            c.ctl("-m", "immediate", "stop")
    finally:
        shutil.rmtree(c.dir, ignore_errors=True)
        os.close(c.port_lock)


def test_free_port__two_runs_side_by_side_reserve_different_ports():
    first, first_lock = _free_port()
    try:
        second, second_lock = _free_port()  # another test run, while the first cluster lives
        os.close(second_lock)
        assert second != first
        third, third_lock = _free_port()  # the second cluster is gone: its port is free again
        os.close(third_lock)
        assert third == second
    finally:
        os.close(first_lock)


def env_for(url: str) -> dict:
    return dict(
        os.environ,
        DATABASE_URL=url,
        PYTHONUNBUFFERED="1",
        DURABLE_MAX_IDLE_SECONDS="1",
        DURABLE_HEARTBEAT_SECONDS="0.5",
    )


def manage(*args: str, url: str) -> None:
    subprocess.run(
        [sys.executable, "testproject/manage.py", *args],
        cwd=ROOT,
        env=env_for(url),
        check=True,
        capture_output=True,
        text=True,
    )


def enqueue(cluster: Cluster, prefix: str, n: int, seconds: float) -> None:
    manage(
        "shell",
        "-c",
        "from demo import pipeline_targets as t\n"
        f"for i in range({n}):\n"
        f"    t.marked_slow.enqueue(scope='tenant-a', command='{prefix}-%d' % i,"
        f" idempotency_key='{prefix}-%d' % i, payload={{'seconds': {seconds}}})",
        url=cluster.url,
    )


def test_server_restarted_fast_then_immediate_under_a_running_loop(cluster):
    proc = subprocess.Popen(
        [
            sys.executable,
            "testproject/manage.py",
            "process_work",
            "--loop",
            "--concurrency",
            "4",
            "--batch",
            "4",
        ],
        cwd=ROOT,
        env=env_for(cluster.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def succeeded(prefix: str) -> int:
        try:
            return cluster.sql(
                "select count(*) from durable_work where state = 'succeeded'"
                " and command_id like %s",
                (prefix + "-%",),
            )[0][0]
        except psycopg.OperationalError:  # the server is still starting up
            return -1

    failure = None
    try:
        for mode in ("fast", "immediate"):
            # 2 s per item, two waves at concurrency 4: the restart must land while items
            # run even when a loaded machine is slow to see the first one start.
            enqueue(cluster, mode, ITEMS, 2.0)
            wait_until(
                lambda m=mode: (
                    proc.poll() is not None
                    or cluster.sql(
                        "select count(*) from demo_effect d join durable_work w"
                        " on w.work_id = d.work_id where w.command_id like %s",
                        (m + "-%",),
                    )[0][0]
                    > 0
                ),
                what=f"the {mode} items to start",
            )
            assert proc.poll() is None, "the loop exited before the restart"
            assert succeeded(mode) < ITEMS, "the items finished before the restart"
            cluster.ctl("-m", mode, "restart")
            wait_until(
                lambda m=mode: proc.poll() is not None or succeeded(m) == ITEMS,
                # Generous: attempts that started before the loss was noticed wait out their
                # retry backoff (about 11 s here); a loaded CI machine must not turn that into
                # a failure. A loop that never recovers still fails it.
                timeout=90,
                what=f"every item to succeed after the {mode} restart",
            )
            assert proc.poll() is None, f"the loop exited after the {mode} restart"
    except AssertionError as exc:
        failure = exc
    finally:
        code, out = stop(proc)
    if failure is not None:
        rows = cluster.sql(
            "select command_id, state, attempt, due_at - now(),"
            " lease_expires_at - now() from durable_work"
            " where state <> 'succeeded'"
        )
        rows += cluster.sql(
            "select work_ref, due_at - now(), lease_owner, lease_expires_at - now()"
            " from durable_work_dispatch"
        )
        rows += cluster.sql("select now(), now() - pg_postmaster_start_time()")
        raise AssertionError(f"{failure}\n{rows}\n{out}")
    assert code == 0, out
    assert "transient database error" in out or "database connection lost" in out, (
        "the restart did not reach the loop: " + out
    )
    assert cluster.sql("select state, count(*) from durable_work group by 1") == [
        ("succeeded", 2 * ITEMS)
    ], out
    assert cluster.sql(
        "select count(*), count(distinct work_id) from demo_effect where key = 'started'"
    ) == [(2 * ITEMS, 2 * ITEMS)], out
    assert cluster.sql("select count(*) from durable_work_dispatch") == [(0,)], out
