"""Parse a docs page into its fenced blocks and markers (the convention in tests/docs/README.md).

Pure text processing: which blocks run (```python, ```sh), which are written to a file
(``<!-- file: path -->``), which are skipped with a reason (``<!-- no-run: reason -->``), and
which services the page needs (``<!-- services: postgres redis -->`` on its first line).
A page that breaks the convention raises :class:`ConventionError` naming its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: Not pages: the screenshots' own index, which tests/browser/screenshots.py writes.
NOT_PAGES = ("screenshots/",)
RUNS = ("python", "sh")
#: ``<!-- name: ... -->`` comments that are not the examples' markers: the reference tables.
KNOWN_COMMENTS = ("reference",)
SERVICES = ("postgres", "redis")
#: Languages a writer may mean to run but that would silently not run: named so the page fails.
AMBIGUOUS = {
    "bash": "sh", "shell": "sh", "zsh": "sh", "shell-session": "console",
    "py": "python", "python3": "python", "pycon": "python", "ipython": "python",
}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>file|no-run|services)\s*:(?P<value>.*?)-->\s*$")
_ANY_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>[a-z-]+)\s*:")


class ConventionError(Exception):
    """A page breaks the examples' convention; the message starts with ``page:line``."""


@dataclass(frozen=True)
class Block:
    page: str  # docs-relative path, e.g. "how-to/webhooks.md"
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    #: ``<!-- file: ... -->``: written there, not executed.
    file: str | None = None
    #: ``<!-- no-run: ... -->``: not executed, for this reason.
    skip: str | None = None

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"

    @property
    def first_code_line(self) -> int:
        return self.line + 1

    @property
    def runs(self) -> bool:
        return self.lang in RUNS and self.file is None and self.skip is None


@dataclass
class Page:
    path: str  # docs-relative
    services: tuple[str, ...] = ()
    blocks: list[Block] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return self.path.removesuffix(".md")


def page_paths() -> list[str]:
    """Every page under docs/, docs-relative, in a stable order."""
    paths = (p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    return sorted(p for p in paths if not p.startswith(NOT_PAGES))


def has_examples(text: str) -> bool:
    """Whether a page has any fence or marker to check (pages of prose alone have none)."""
    return any(_FENCE.match(line) or _ANY_MARKER.match(line) for line in text.splitlines())


def parse_page(path: str, text: str) -> Page:
    """The page's blocks in order, each with the marker that precedes it."""
    lines = text.splitlines()
    page = Page(path)
    pending: tuple[str, str, int] | None = None  # (kind, value, line) of the marker awaiting its block
    i = 0
    while i < len(lines):
        line, number = lines[i], i + 1
        marker = _MARKER.match(line)
        if marker:
            kind, value = marker["kind"], marker["value"].strip()
            if kind == "services":
                page.services = _services(path, number, value)
            else:
                if pending:
                    raise _dangling(path, pending)
                pending = (kind, value, number)
            i += 1
            continue
        other = _ANY_MARKER.match(line)
        if other and other["kind"] not in KNOWN_COMMENTS:
            raise ConventionError(f"docs/{path}:{number}: unknown marker <!-- {other['kind']}: -->; the markers are "
                                  "file, no-run and services")
        fence = _FENCE.match(line)
        if not fence:
            if pending and line.strip():
                raise ConventionError(f"docs/{path}:{pending[2]}: <!-- {pending[0]}: --> "
                                      "must come right before its block")
            i += 1
            continue
        block, i = _read_block(path, lines, i, fence, pending)
        page.blocks.append(block)
        pending = None
    if pending:
        raise _dangling(path, pending)
    return page


def _dangling(path: str, pending: tuple[str, str, int]) -> ConventionError:
    return ConventionError(f"docs/{path}:{pending[2]}: <!-- {pending[0]}: --> is not followed by a block")


def _services(path: str, number: int, value: str) -> tuple[str, ...]:
    names = tuple(value.split())
    if number != 1:
        raise ConventionError(f"docs/{path}:{number}: <!-- services: --> belongs on the page's first line")
    unknown = [n for n in names if n not in SERVICES]
    if not names or unknown:
        raise ConventionError(f"docs/{path}:{number}: services are {' and/or '.join(SERVICES)}, not {value!r}")
    return names


def _read_block(path: str, lines: list[str], start: int, fence: re.Match[str],
                pending: tuple[str, str, int] | None) -> tuple[Block, int]:
    indent, mark, info = fence["indent"], fence["fence"], fence["info"].strip()
    lang = info.split()[0].lstrip("{.").rstrip("}").lower() if info else ""
    close = re.compile(rf"^[ \t]*{re.escape(mark[0])}{{{len(mark)},}}\s*$")
    body: list[str] = []
    i = start + 1
    while i < len(lines) and not close.match(lines[i]):
        body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
        i += 1
    if i == len(lines):
        raise ConventionError(f"docs/{path}:{start + 1}: the block opened here is never closed")
    where = f"docs/{path}:{start + 1}"
    if lang in AMBIGUOUS:
        raise ConventionError(f"{where}: ```{lang} is ambiguous: use ```{AMBIGUOUS[lang]} (executed) "
                              "or ```console (shown, not run)")
    file = skip = None
    if pending:
        kind, value, _ = pending
        if kind == "file":
            file = _relative_file(where, value)
        elif not value:
            raise ConventionError(f"{where}: <!-- no-run: --> needs a reason saying why the block cannot run here")
        elif lang not in RUNS:
            raise ConventionError(f"{where}: <!-- no-run: --> only applies to ```python or ```sh, not ```{lang}")
        else:
            skip = value
    code = "\n".join(body) + "\n" if body else ""
    return Block(path, start + 1, lang, code, file=file, skip=skip), i + 1


def _relative_file(where: str, value: str) -> str:
    target = PurePosixPath(value)
    if not value or target.is_absolute() or ".." in target.parts:
        raise ConventionError(f"{where}: <!-- file: {value} --> must be a relative path inside the page's directory")
    return target.as_posix()
