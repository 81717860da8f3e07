#!/usr/bin/env bash
# The demo of durable_schedule, on testproject, in its own database durable_schedule_demo.
# Run it through `make demo` (which installs the package into .venv and finds or starts
# PostgreSQL first), or by hand:
#     env_line=$(scripts/ensure_postgres.sh) && eval "$env_line" && PYTHON=.venv/bin/python scripts/demo.sh
#
# The demo is a list of steps (see STEPS at the bottom). To extend it, write a function
# step_<name> that prints what it shows, and append <name> to STEPS.
set -euo pipefail

PROJECT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$PROJECT_DIR"

PYTHON=${PYTHON:-python3}
DEMO_DB=${DURABLE_DEMO_DB:-durable_schedule_demo}
MANAGE=("$PYTHON" testproject/manage.py)

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

n_step=0
banner() {
    n_step=$((n_step + 1))
    printf '\n== demo step %d: %s\n' "$n_step" "$*"
}

# ---- steps ---------------------------------------------------------------------------------------

step_database() {
    banner "database $DEMO_DB (dropped and created fresh)"
    "$PYTHON" - "$DATABASE_URL" <<'EOF'
import sys
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg import sql

url = sys.argv[1]
parts = urlsplit(url)
name = unquote(parts.path.lstrip("/"))
admin_url = parts._replace(path="/postgres").geturl()
with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
    server = conn.execute("show server_version").fetchone()[0]
    conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
    conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    print(f"created database {name} (PostgreSQL {server})")
EOF
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
    banner "schedules, transactional Work, bounded passes (demo_story)"
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

STEPS=(
    database
    migrate
    check
    story
    cron
    status
)

# ---- run ---------------------------------------------------------------------------------------

printf 'demo: durable_schedule on %s\n' "$(sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$DATABASE_URL")"
for step in "${STEPS[@]}"; do
    "step_$step"
done
printf '\ndemo: all %d steps done (%s)\n' "${#STEPS[@]}" "${STEPS[*]}"
