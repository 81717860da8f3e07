"""Reading the fenced code blocks of a docs page, so that tests can execute every snippet."""

from __future__ import annotations

import re
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A fence may be indented (a code block inside a list item); it closes at the same indent.
_FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)(?P<info>[^\n]*)\n(?P<body>.*?)"
                    r"^(?P=indent)```[ ]*$", re.MULTILINE | re.DOTALL)
_TITLE = re.compile(r'title="([^"]+)"')


@dataclass(frozen=True)
class Snippet:
    lang: str
    title: str
    body: str
    line: int

    def where(self, page: str) -> str:
        return f"{page}:{self.line} ({self.lang}{' ' + self.title if self.title else ''})"

    def commands(self) -> list[list[str]]:
        """A shell block's commands (comments dropped), each split like the shell would."""
        out = []
        for raw in self.body.splitlines():
            words = shlex.split(raw, comments=True)
            if words:
                out.append(words)
        return out


def snippets(page: Path) -> list[Snippet]:
    text = page.read_text()
    found = []
    for m in _FENCE.finditer(text):
        title = _TITLE.search(m["info"])
        body = textwrap.dedent(m["body"])
        found.append(Snippet(m["lang"], title.group(1) if title else "", body,
                             text.count("\n", 0, m.start()) + 1))
    return found
