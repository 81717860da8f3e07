"""A real PgBouncer in transaction mode on a loopback port, in front of the test server.

Started by the tests (``PgBouncer.start()``), stopped and restarted by the failover tests. The
binary is Debian's ``pgbouncer`` package (``apt-get install -y pgbouncer``; .ci/run installs
it). PgBouncer refuses to run as root, so as root it runs as ``nobody`` (``-u``) from a folder
that user owns. ``max_prepared_statements`` stays at 0 on versions that know it, which is the
behaviour of Debian 12's 1.18 and of any PgBouncer without that setting: the case the runtime
must detect.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

#: Where Debian's package puts the binary; PATH is searched first.
CANDIDATES = ("pgbouncer", "/usr/sbin/pgbouncer")
#: The env var that turns "PgBouncer is not installed" from a skip into a failure (CI sets it).
REQUIRE_ENV = "DURABLE_REQUIRE_PGBOUNCER"
HOW_TO_ENABLE = ("PgBouncer not installed: apt-get install -y pgbouncer (or put pgbouncer on "
                 "PATH) to run the pooler tests")


def find_binary() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgBouncer:
    def __init__(self, upstream_url: str, *, binary: str, pool_size: int = 4) -> None:
        self.upstream = urlsplit(upstream_url)
        self.binary = binary
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="durable_pgbouncer_"))
        self.dir.chmod(0o755)
        self.proc: subprocess.Popen | None = None
        user = self.upstream.username or "postgres"
        (self.dir / "userlist.txt").write_text(f'"{user}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(f"""\
[databases]
* = host={self.upstream.hostname or '127.0.0.1'} port={self.upstream.port or 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.dir}/userlist.txt
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,options
logfile = {self.dir}/pgbouncer.log
pidfile =
server_login_retry = 1
""")
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody")
            for f in self.dir.iterdir():
                shutil.chown(f, "nobody")

    def url(self, database_url: str) -> str:
        """``database_url`` (the test database on the upstream server) through the pooler."""
        parts = urlsplit(database_url)
        auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{self.port}"))

    def start(self) -> None:
        argv = [self.binary]
        if os.geteuid() == 0:
            argv += ["-u", "nobody"]
        argv.append(str(self.dir / "pgbouncer.ini"))
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pgbouncer exited: {self.proc.stderr.read()}\n{self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("pgbouncer did not listen within 15 s:\n" + self.log())

    def stop(self) -> None:
        """SIGTERM: PgBouncer's immediate shutdown (clients are cut off, as in a failover)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log(self) -> str:
        path = self.dir / "pgbouncer.log"
        return path.read_text() if path.exists() else ""

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
