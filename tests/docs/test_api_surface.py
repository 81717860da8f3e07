"""docs/api.md is the public contract: every name a public module exports is on the page, and
every call the page writes out, ``name(parameters)``, exists with those parameter names, and
names every parameter the call requires. A renamed or undocumented parameter (the page's
``provision_scope(scope)`` against the code's ``scope_id``, so ``provision_scope(scope=...)``
was a TypeError) fails here."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from tests.docs.snippets import ROOT

PAGE = ROOT / "docs" / "api.md"
MODULES = ("durable_schedule.work", "durable_schedule.schedules", "durable_schedule.tasks",
           "durable_schedule.processor", "durable_schedule.operations.provisioning",
           "durable_schedule.testing")
_SECTION = re.compile(r"^## .*?`(durable_schedule(?:\.\w+)+)`", re.MULTILINE)
_SPAN = re.compile(r"`([^`\n]+)`")
_CALL = re.compile(r"^(?:([A-Z]\w*)\.)?([a-z_]\w*|[A-Z]\w*)\((.*)\)(?:\s*->.*)?$")


def _sections() -> dict[str, str]:
    text = re.sub(r"```.*?```", "", PAGE.read_text(), flags=re.DOTALL)
    found = list(_SECTION.finditer(text))
    return {m.group(1): text[m.end():found[i + 1].start() if i + 1 < len(found) else
                             text.index("\n## ", m.end()) if "\n## " in text[m.end():]
                             else len(text)]
            for i, m in enumerate(found)}


def _documented_calls():
    for module, body in _sections().items():
        for row in body.splitlines():
            if not row.startswith("| `"):
                continue
            first_cell = row.split(" | ")[0]
            for span in _SPAN.findall(first_cell):
                m = _CALL.match(span.strip())
                if m:
                    yield module, m.group(1), m.group(2), m.group(3)


def _parameters(text: str) -> list[tuple[str, bool]]:
    """(name, has a default) for each documented parameter; ``*``, ``…`` and quoted or
    alternative values (``"applied" | "not_applied"``) are not names."""
    out = []
    for part in re.split(r",\s*", text):
        part = part.strip()
        name = re.match(r"^\*{0,2}([a-z_]\w*)\s*(=)?", part)
        if name and not part.startswith('"'):
            out.append((name.group(1), bool(name.group(2))))
    return out


CALLS = list(_documented_calls())


def test_api_page__every_exported_name_is_on_it():
    text = PAGE.read_text()
    words = set(re.findall(r"\w+", text))
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            assert name in words, f"{module_name}.{name} is exported but not in docs/api.md"


def test_api_page__has_calls_to_check():
    assert len(CALLS) > 30, CALLS


@pytest.mark.parametrize(("module_name", "owner", "name", "params"), CALLS,
                         ids=[f"{c[1] + '.' if c[1] else ''}{c[2]}" for c in CALLS])
def test_api_page__a_documented_call_has_these_parameters(module_name, owner, name, params):
    module = importlib.import_module(module_name)
    target = getattr(getattr(module, owner), name) if owner else getattr(module, name)
    signature = inspect.signature(target)
    real = {n: p for n, p in signature.parameters.items() if n != "self"}
    documented = _parameters(params)
    for param, _default in documented:
        assert param in real, (f"docs/api.md: {name}({params}): {param!r} is no parameter "
                               f"of {name}{signature}")
    if "…" in params or "..." in params:
        return  # the page elides the rest
    names = {p for p, _ in documented}
    for param in real.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.default is param.empty:
            assert param.name in names, (f"docs/api.md: {name}({params}) leaves out the "
                                         f"required parameter {param.name!r}")


def _command_rows() -> list[tuple[str, set[str]]]:
    section = PAGE.read_text().split("## Management commands", 1)[1].split("\n## ", 1)[0]
    rows = []
    for row in section.splitlines():
        m = re.match(r"\| `(\w+)( [^`]*)?`", row)
        if m:
            rows.append((m.group(1), set(re.findall(r"--[a-z][a-z-]*", m.group(2) or ""))))
    return rows


def test_api_page__every_command_and_option_is_documented_as_it_is():
    """The commands table lists every command of the package with exactly its options (it
    missed sync_schedules, process_schedules --claim-batch and durable_status --timeout)."""
    from django.core.management import get_commands, load_command_class
    from django.core.management.base import BaseCommand

    common = {o for action in BaseCommand().create_parser("manage.py", "x")._actions
              for o in action.option_strings}
    rows = dict(_command_rows())
    ours = sorted(name for name, app in get_commands().items() if app == "durable_schedule")
    assert sorted(rows) == ours
    for name in ours:
        parser = load_command_class("durable_schedule", name).create_parser("manage.py", name)
        real = {o for action in parser._actions for o in action.option_strings
                if o.startswith("--")} - common
        assert rows[name] == real, (name, sorted(real - rows[name]), sorted(rows[name] - real))


def test_api_page__the_settings_table_is_the_settings_with_their_defaults():
    from datetime import timedelta

    from durable_schedule import conf

    section = PAGE.read_text().split("## Settings", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): m.group(2) for m in re.finditer(
        r"^\| `([A-Z_]+)` \| ([^|]+) \|", section, re.MULTILINE)}
    assert sorted(rows) == sorted(conf.DEFAULTS)
    for key, shown in rows.items():
        literal = re.fullmatch(r"`(.+)`", shown.strip())
        if not literal:
            continue  # described in words (ADMIN_SCOPES)
        value = eval(literal.group(1), {"timedelta": timedelta})  # noqa: S307 -- the page's own text
        assert value == conf.DEFAULTS[key], (key, shown)


def test_api_page__every_error_is_in_its_family_or_named_as_outside():
    """The page promises ScheduleError for DS1xx, WorkError DS2xx, SecurityError DS3xx and
    OperationsError DS4xx; a code outside its family (catching ScheduleError misses it) is
    named on the page."""
    from durable_schedule import errors

    families = {"1": errors.ScheduleError, "2": errors.WorkError, "3": errors.SecurityError,
                "4": errors.OperationsError}
    section = PAGE.read_text().split("## Errors", 1)[1]
    for cls in errors.all_error_classes():
        code = cls.__dict__.get("code")
        if not code or cls is errors.DurableError or cls in families.values():
            continue
        if not issubclass(cls, families[code[2]]):
            assert f"`{cls.__name__}` (`{code}`" in section, (cls.__name__, code)
