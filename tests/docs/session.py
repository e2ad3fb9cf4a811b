"""The interpreter session of one docs page: runs its ```python blocks in one namespace.

Started by tests/docs/runner.py as ``python session.py CMD_FD REPLY_FD`` in the page's temporary
directory. Each command is one JSON line ``{"path", "line", "code"}``; the reply is
``{"ok": true}`` or ``{"ok": false, "error": traceback}``. The code is compiled under the page's
own path, padded to its line, so a traceback names the page and the line in it.
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def main() -> int:
    commands = os.fdopen(int(sys.argv[1]), "r", encoding="utf-8")
    replies = os.fdopen(int(sys.argv[2]), "w", encoding="utf-8")
    # Like `python` started in the page's directory: its modules import, this file's do not.
    sys.path[0] = ""
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    for raw in commands:
        command = json.loads(raw)
        source = "\n" * (command["line"] - 1) + command["code"]
        try:
            exec(compile(source, command["path"], "exec"), namespace)  # the docs' own examples
            reply: dict[str, object] = {"ok": True}
        except BaseException as exc:  # report everything, SystemExit included, then go on
            frames = traceback.TracebackException.from_exception(exc)
            frames.stack = type(frames.stack).from_list(frames.stack[1:])  # drop this file's exec frame
            reply = {"ok": False, "error": "".join(frames.format())}
        sys.stdout.flush()
        sys.stderr.flush()
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
