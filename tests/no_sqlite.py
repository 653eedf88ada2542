"""``python -m tests.no_sqlite ARGS``: the ``teamlore`` CLI with an audit hook that ends the
process (exit 97, a line on stderr) the moment anything opens a SQLite connection: the server
stack's worker must open none (issue 18). The hook is inherited by forked pool processes."""

from __future__ import annotations

import os
import sys
import traceback

REFUSED = 97


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "sqlite3.connect":
        sys.stderr.write(f"a SQLite connection was opened: {args!r}, from:\n")
        traceback.print_stack(file=sys.stderr)
        sys.stderr.flush()
        os._exit(REFUSED)


if __name__ == "__main__":
    sys.addaudithook(_hook)
    from teamlore.cli import main

    sys.argv = ["teamlore", *sys.argv[1:]]
    main()
