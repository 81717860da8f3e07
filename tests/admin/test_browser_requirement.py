"""Issue 17 item 4: without Chromium the browser test is skipped, with one line saying how to
enable it; under DURABLE_REQUIRE_BROWSER=1 (set by .ci/run) the same run fails instead.

Runs pytest on tests/admin/test_browser.py in a subprocess with DURABLE_CHROMIUM pointing at a
file that does not exist, so it behaves the same whether this machine has Chromium or not.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.docs.snippets import ROOT


def run_browser_test(tmp_path, **env) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.pop("DURABLE_REQUIRE_BROWSER", None)
    # The child pytest must not share this run's test database: with DURABLE_TEST_DB_NAME
    # inherited it would clobber that database on start and drop it at its end, under the
    # tests still running here. Without it the settings name one per process.
    full_env.pop("DURABLE_TEST_DB_NAME", None)
    full_env.update(DURABLE_CHROMIUM=str(tmp_path / "no-chromium-here"), **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "tests/admin/test_browser.py", "-q", "-rs",
         "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=300)


def test_browser_requirement__missing_chromium_skips_with_how_to_enable_it(tmp_path):
    proc = run_browser_test(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips, proc.stdout
    for line in skips:
        assert "no chromium binary" in line and "make browser" in line, line
        assert "DURABLE_CHROMIUM" in line, line
    assert " passed" not in proc.stdout and "failed" not in proc.stdout


def test_browser_requirement__required_browser_missing_is_a_failure(tmp_path):
    proc = run_browser_test(tmp_path, DURABLE_REQUIRE_BROWSER="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DURABLE_REQUIRE_BROWSER=1, but no chromium binary" in proc.stdout
    assert "skipped" not in proc.stdout.splitlines()[-1]
