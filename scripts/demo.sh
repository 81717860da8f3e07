#!/usr/bin/env bash
# The demo of durable_schedule, on testproject, in a database of its own.
# Run it through `make demo` (which installs the package into .venv and finds or starts
# PostgreSQL first), or by hand:
#     env_line=$(scripts/ensure_postgres.sh) && eval "$env_line" && PYTHON=.venv/bin/python scripts/demo.sh
#
# Each run creates its own database, durable_schedule_demo_<pid>_<random> (like the test
# databases), so two demos on one server never collide, and drops it when it ends. It only ever
# drops the database it created itself.
#
#   DEMO_KEEP=1          keep the database at the end (to open the admin on it, or run --loop)
#   DURABLE_DEMO_DB=name use this database name; it must not exist yet (the demo refuses to
#                        touch a database it did not create)
#   DEMO_STEPS="a b"     run only these steps, in this order (default: all of STEPS)
#
# The demo is a list of steps (see STEPS at the bottom). To extend it, write a function
# step_<name> that prints what it shows, and append <name> to STEPS.
set -euo pipefail

PROJECT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$PROJECT_DIR"

PYTHON=${PYTHON:-python3}
DEMO_DB=${DURABLE_DEMO_DB:-durable_schedule_demo_$$_$(printf '%04x%04x' $RANDOM $RANDOM)}
DEMO_KEEP=${DEMO_KEEP:-0}
MANAGE=("$PYTHON" testproject/manage.py)
ADMIN_USER=demo
ADMIN_PASSWORD=$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(9))')

if [[ -z ${DATABASE_URL:-} ]]; then
    echo "demo: DATABASE_URL is not set; run 'make demo', or eval \"\$(scripts/ensure_postgres.sh)\"" >&2
    exit 1
fi

# The server's URL with the demo database in place of the one DATABASE_URL names.
DATABASE_URL=$("$PYTHON" - "$DATABASE_URL" "$DEMO_DB" <<'EOF'
import sys
from urllib.parse import quote, urlsplit, urlunsplit
parts = urlsplit(sys.argv[1])
print(urlunsplit(parts._replace(path="/" + quote(sys.argv[2]))))
EOF
)
export DATABASE_URL
export DJANGO_SETTINGS_MODULE=testproject.settings
SHOWN_URL=$(sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$DATABASE_URL")

n_step=0
banner() {
    n_step=$((n_step + 1))
    printf '\n== demo step %d: %s\n' "$n_step" "$*"
}

# create | drop: the demo database, through the server's maintenance database "postgres".
demo_database() {
    "$PYTHON" - "$1" "$DATABASE_URL" <<'EOF'
import sys
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg import sql

action, url = sys.argv[1], sys.argv[2]
parts = urlsplit(url)
name = unquote(parts.path.lstrip("/"))
admin_url = parts._replace(path="/postgres").geturl()
with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
    if action == "create":
        if conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone():
            sys.exit(f"demo: database {name} already exists and this run did not create it: "
                     "the demo never drops or reuses someone else's database; choose another "
                     "DURABLE_DEMO_DB (or leave it unset for a fresh name)")
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        server = conn.execute("show server_version").fetchone()[0]
        print(f"created database {name} (PostgreSQL {server})")
    else:
        conn.execute(sql.SQL("drop database if exists {}").format(sql.Identifier(name)))
        print(f"demo: dropped this run's database {name} (DEMO_KEEP=1 keeps it)")
EOF
}

CREATED=0
finish() {
    local status=$?
    if [[ $CREATED == 1 && $DEMO_KEEP != 1 ]]; then
        demo_database drop || status=1
    elif [[ $CREATED == 1 ]]; then
        printf 'demo: kept database %s (DEMO_KEEP=1); drop it when done:\n' "$DEMO_DB"
        printf '    psql "%s" -c '\''drop database "%s"'\''\n' \
            "$(sed -E 's#/[^/]*$#/postgres#' <<<"$SHOWN_URL")" "$DEMO_DB"
    fi
    exit "$status"
}
trap finish EXIT

# ---- steps ---------------------------------------------------------------------------------------

step_database() {
    banner "database $DEMO_DB (new for this run, dropped at the end unless DEMO_KEEP=1)"
    demo_database create
    CREATED=1
}

step_migrate() {
    banner "migrate (durable_schedule's schema, roles, row-level security)"
    "${MANAGE[@]}" migrate --noinput
}

step_check() {
    banner "system checks"
    "${MANAGE[@]}" check
}

step_story() {
    banner "schedules, transactional Work, a failure and its retry, bounded passes (demo_story)"
    "${MANAGE[@]}" demo_story
}

step_cron() {
    banner "a cron schedule in Europe/Berlin across the DST change (demo_cron)"
    "${MANAGE[@]}" demo_cron
}

step_status() {
    banner "durable_status (exit 1: the demo left a suspended schedule on purpose)"
    "${MANAGE[@]}" durable_status || true
}

step_superuser() {
    banner "an admin user for this database"
    DJANGO_SUPERUSER_PASSWORD=$ADMIN_PASSWORD "${MANAGE[@]}" createsuperuser --noinput \
        --username "$ADMIN_USER" --email "$ADMIN_USER@example.com"
}

step_next() {
    local env="DATABASE_URL='$SHOWN_URL'"
    banner "what to read next"
    cat <<EOF
The demo's own source, which uses the public API only:
    scripts/demo.sh                                      these steps
    testproject/demo/management/commands/demo_story.py   the story above, chapter by chapter
    testproject/demo/work.py                             the Work definitions: executor, reconciler, attempt plan

The admin on this run's database (user $ADMIN_USER, password $ADMIN_PASSWORD):
    $env $PYTHON testproject/manage.py runserver
    then open http://127.0.0.1:8000/admin/durable_schedule/

The runners as production runs them, instead of the bounded passes above (stop with Ctrl-C):
    $env $PYTHON testproject/manage.py process_schedules --loop
    $env $PYTHON testproject/manage.py process_work --loop

Using it in your own project: docs/getting-started.md
EOF
    if [[ $SHOWN_URL != "$DATABASE_URL" ]]; then
        echo "(DATABASE_URL's password is shown as ***: put yours in its place.)"
    fi
    if [[ $DEMO_KEEP != 1 ]]; then
        echo "(This run's database is dropped now; run 'DEMO_KEEP=1 make demo' to keep it for the commands above.)"
    fi
}

STEPS=(
    database
    migrate
    check
    story
    cron
    status
    superuser
    next
)

# ---- run ---------------------------------------------------------------------------------------

if [[ -n ${DEMO_STEPS:-} ]]; then
    read -r -a STEPS <<<"$DEMO_STEPS"
fi
printf 'demo: durable_schedule on %s\n' "$SHOWN_URL"
for step in "${STEPS[@]}"; do
    if ! declare -F "step_$step" >/dev/null; then
        echo "demo: no step '$step' (steps: $(declare -F | sed -n 's/^declare -f step_//p' | paste -sd' '))" >&2
        exit 2
    fi
    "step_$step"
done
printf '\ndemo: all %d steps done (%s)\n' "${#STEPS[@]}" "${STEPS[*]}"
