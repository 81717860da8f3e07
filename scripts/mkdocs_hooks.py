"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks``).

The benchmark chart is written by ``python -m bench`` to bench/results/latest.png, outside the
docs folder, and docs/benchmarks.md links it there so that the page also renders on a code host.
MkDocs cannot follow a link out of its docs folder, so the site gets the chart as a generated
file, and the page's link is pointed at it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
CHARTS = {"../bench/results/latest.png": "img/bench/latest.png"}


def on_files(files, config):
    for outside, inside in CHARTS.items():
        source = (ROOT / "docs" / outside).resolve()
        files.append(File.generated(config, inside, abs_src_path=str(source)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "benchmarks.md":
        for outside, inside in CHARTS.items():
            markdown = markdown.replace(f"]({outside})", f"]({inside})")
    return markdown


# Every public name must have its generated entry on the API page of its module: a name added to
# ``__all__`` that the generator cannot see (say, one shadowed by a submodule) fails the build.
API_PAGES = {"durable_schedule.schedules": "reference/schedules.md",
             "durable_schedule.work": "reference/work.md"}


def on_post_page(output, page, config):
    for module, src in API_PAGES.items():
        if page.file.src_uri != src:
            continue
        missing = [name for name in _public_names(module)
                   if f'id="{module}.{name}"' not in output
                   and f'id="{module}.{name}.{name}"' not in output]
        if missing:
            raise PluginError(f"{src}: no generated entry for {module}.{missing}")
    return output


def _public_names(module: str) -> list[str]:
    # Read __all__ without importing the package (importing would need Django settings).
    path = ROOT / module.replace(".", "/") / "__init__.py"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, "id", "") == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise PluginError(f"{path} has no __all__")
