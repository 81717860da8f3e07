#!/usr/bin/env bash
# tox for `make test`: the environments two at a time when every test environment has a
# PostgreSQL server of its own, else one after another (docs/development.md "The test command").
#
#     scripts/run_tox.sh TOX [-e ENV,ENV...] [-- PYTEST_ARGS...]
#
# Two at a time needs all of: the matrix servers exported by `make test` (DURABLE_PG16_URL,
# DURABLE_PG17_URL, DURABLE_PG18_URL), each on another host:port than DATABASE_URL and than each
# other; no tox option other than `-e`; bash 5.1 or newer (`wait -n -p`); DURABLE_TOX_JOBS unset
# or above 1 (it sets how many at a time, default 2). Otherwise it is plain `TOX ARGS...`. The tests of one environment share
# nothing with another's but the machine (each env has its own server, cluster-wide roles
# included; ports and temporary folders are allocated per run).
#
# Two at a time: tox first sets every environment up in one run (`--notest`: the editable build
# writes into the source tree, so no two builds may overlap), then runs each environment's
# commands as `tox run -e ENV --skip-pkg-install`, at most two (DURABLE_TOX_JOBS) at once, into
# .tox/make-test/ENV.log; each log is printed whole when its environment ends, then a summary.
# The exit status is non-zero when any environment failed (or was never run).
set -uo pipefail

TOX=$1
shift

serial() {
    echo "make test: $1; the tox environments run one after another" >&2
    exec "$TOX" "${ARGS[@]}"
}

ARGS=("$@")
envs=""
posargs=()
while (($#)); do
    case $1 in
        -e) envs=${2:-}; shift 2 || shift ;;
        --) shift; posargs=("$@"); break ;;
        *) serial "tox option $1 given" ;;
    esac
done

jobs=${DURABLE_TOX_JOBS:-2}
[[ $jobs =~ ^[0-9]+$ ]] || { echo "make test: DURABLE_TOX_JOBS must be a number, got '$jobs'" >&2; exit 2; }
((jobs > 1)) || serial "DURABLE_TOX_JOBS=$jobs"
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then serial "bash $BASH_VERSION is older than 5.1"; fi

# host:port of a postgresql:// URL (localhost and 127.0.0.1 are one host; no port is 5432).
server_of() {
    python3 - "$1" <<'EOF'
import sys
from urllib.parse import urlsplit
u = urlsplit(sys.argv[1])
host = u.hostname or "127.0.0.1"
print(f"{'127.0.0.1' if host == 'localhost' else host}:{u.port or 5432}")
EOF
}
declare -A seen=()
for var in DATABASE_URL DURABLE_PG16_URL DURABLE_PG17_URL DURABLE_PG18_URL; do
    [[ -n ${!var:-} ]] || serial "$var is not set, so its environment runs on DATABASE_URL's server"
    server=$(server_of "${!var}") || serial "cannot read the server of $var"
    [[ -z ${seen[$server]:-} ]] || serial "$var and ${seen[$server]} name one server, $server"
    seen[$server]=$var
done

if [[ -z $envs ]]; then
    envs=$("$TOX" -l | paste -sd, -) || exit 1
fi
IFS=, read -r -a env_list <<<"$envs"

echo "make test: every test environment has a PostgreSQL server of its own; the tox" \
    "environments run $jobs at a time (set up first, one after another)"
"$TOX" run --notest -e "$envs" || exit 1

logs=.tox/make-test
mkdir -p "$logs"
declare -A env_of=() started=() status=()
running=0
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM

finish() {  # wait for one environment, print its log and record its status
    local pid rc=0
    wait -n -p pid || rc=$?
    local env=${env_of[$pid]}
    status[$env]=$rc
    running=$((running - 1))
    echo "==== tox env $env (exit $rc, $((SECONDS - started[$env])) s): $logs/$env.log"
    cat "$logs/$env.log"
    echo "==== end of tox env $env"
}

for env in "${env_list[@]}"; do
    ((running < jobs)) || finish
    echo "make test: $env started (log: $logs/$env.log)"
    started[$env]=$SECONDS
    "$TOX" run -e "$env" --skip-pkg-install ${posargs[@]+-- "${posargs[@]}"} >"$logs/$env.log" 2>&1 &
    env_of[$!]=$env
    pids+=("$!")
    running=$((running + 1))
done
while ((running > 0)); do finish; done

failed=0
echo "make test: summary"
for env in "${env_list[@]}"; do
    rc=${status[$env]:-none}
    if [[ $rc == 0 ]]; then echo "  $env: OK"; else echo "  $env: FAILED (exit $rc)"; failed=1; fi
done
exit "$failed"
