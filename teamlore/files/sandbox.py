"""Read one file in a subprocess with a time and memory limit (``parsing.py``, started by path).

A hostile or broken file (a zip bomb, a truncated PDF, a parser's endless loop) costs at most the
limits and ends as one line in ``Unreadable``: the process that ingests never parses a file itself.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from teamlore.errors import MissingExtra, Unreadable
from teamlore.extras import install_command

PARSER = Path(__file__).with_name("parsing.py")


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """How much of one file is read, and what its reader may spend (Settings ``file_*``)."""

    max_pages: int = 200
    max_chars: int = 1_000_000
    max_unzipped_bytes: int = 200_000_000
    max_ratio: int = 200  # a part unpacking to this many times its packed size is a bomb
    timeout_s: float = 60.0
    memory_mb: int = 768


@dataclass(frozen=True, slots=True)
class ReadFile:
    kind: str  # pdf, docx, xlsx, pptx, text, markdown, csv, tsv, html
    pages: int  # pages, sheets or slides the file has (0: not paged)
    sections: tuple[tuple[str, str], ...]  # (locator, text): "p. 3", "sheet Budget", "slide 2", ""
    notes: tuple[str, ...]  # limits reached ("read 200 of 500 pages ...")


def read_file(data: bytes, name: str, mime: str, limits: ReadLimits) -> ReadFile:
    """The file's text by section, read in a subprocess; ``Unreadable`` with one line otherwise,
    ``MissingExtra`` when the library for its format is not installed."""
    header = {
        "name": name,
        "mime": mime,
        "memory_mb": limits.memory_mb,
        "cpu_s": max(1, math.ceil(limits.timeout_s)),
        "limits": {
            "max_pages": limits.max_pages,
            "max_chars": limits.max_chars,
            "max_unzipped_bytes": limits.max_unzipped_bytes,
            "max_ratio": limits.max_ratio,
        },
    }
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(PARSER)],
            input=json.dumps(header).encode() + b"\n" + data,
            capture_output=True,
            timeout=limits.timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise Unreadable(
            f"reading took longer than {limits.timeout_s:g} s (TEAMLORE_FILE_TIMEOUT_S)"
        ) from None
    return _answer(done, limits)


def _answer(done: subprocess.CompletedProcess[bytes], limits: ReadLimits) -> ReadFile:
    if done.returncode != 0:
        if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            raise Unreadable(f"reading took longer than {limits.timeout_s:g} s (TEAMLORE_FILE_TIMEOUT_S)")
        if b"MemoryError" in done.stderr:
            raise Unreadable(f"needed more than {limits.memory_mb} MB (TEAMLORE_FILE_MEMORY_MB)")
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise Unreadable(f"the reader stopped (exit {done.returncode}): {last[:200]}")
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        raise Unreadable("the reader gave no answer") from None
    if answer.get("missing"):
        raise MissingExtra(f"reading this file needs {answer['missing']}: {install_command('files')}")
    if not answer.get("ok"):
        raise Unreadable(str(answer.get("reason") or "unreadable"))
    sections = tuple((str(where), str(text)) for where, text in answer["sections"])
    return ReadFile(answer["kind"], int(answer["pages"]), sections, tuple(answer["notes"]))
