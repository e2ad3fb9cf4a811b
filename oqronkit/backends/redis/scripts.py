"""Lua scripts loaded from the packaged ``lua/*.lua`` files and registered with redis-py.

Each file's header lists its KEYS, ARGV and every key pattern it touches. A header line
``-- requires: queue_lib.lua`` puts that helper file's text in front of the script, so
shared helpers live once. Scripts run by EVALSHA; redis-py's ``Script`` reloads one
(SCRIPT LOAD, then EVALSHA again) when the server answers NOSCRIPT, which is what a
server restart or a ``SCRIPT FLUSH`` causes. A NOSCRIPT reply means the script did not
run, so that reload never runs anything twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from typing import Any

from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from .connection import Client

#: Most due delayed jobs one claim promotes: bounds the script's run time (Redis runs
#: nothing else meanwhile); the rest are promoted by the next claims.
PROMOTE_BATCH = 1000
_REQUIRES = re.compile(r"^--\s*requires:\s*(?P<name>[\w.]+)\s*$", re.MULTILINE)


@cache
def lua_source(name: str) -> str:
    """The text of ``lua/<name>`` with the helper files it requires in front."""
    text = resources.files(__package__).joinpath("lua", name).read_text(encoding="utf-8")
    helpers = [lua_source(required) for required in _REQUIRES.findall(text)]
    return "\n".join([*helpers, text])


class Scripts:
    """The named scripts of one client (``scripts["claim"](keys=..., args=...)``)."""

    def __init__(self, client: Client, names: Iterable[str]) -> None:
        self._client = client
        self._scripts: dict[str, Script] = {
            name: client.register_script(lua_source(f"{name}.lua")) for name in names
        }

    def __getitem__(self, name: str) -> Script:
        return self._scripts[name]

    def load_all(self) -> None:
        """SCRIPT LOAD every script in one round trip, so a syntax error or a server that
        refuses scripts shows at start-up rather than on the first claim."""
        if isinstance(self._client, RedisCluster):
            # SCRIPT LOAD goes to every master; a cluster pipeline cannot fan out.
            for script in self._scripts.values():
                script.sha = self._client.script_load(script.script)
            return
        pipe = self._client.pipeline(transaction=False)
        for script in self._scripts.values():
            pipe.script_load(script.script)
        for script, sha in zip(self._scripts.values(), pipe.execute(), strict=True):
            script.sha = sha

    def run_many(self, calls: Sequence[tuple[str, Sequence[Any], Sequence[Any]]],
                 *, mget: Sequence[str] | None = None) -> list[Any]:
        """Run several (name, keys, args) calls in one pipelined round trip.

        Only for calls that may safely run twice (reads, idempotent writes): when the
        server has lost the scripts, every call is sent again after a reload, and the
        calls that did run the first time (none, unless scripts were partly cached) run
        again. redis-py's own pipeline script support would add a SCRIPT EXISTS round
        trip to every batch instead.
        """
        try:
            return self._pipelined(calls, mget)
        except NoScriptError:
            self.load_all()
            return self._pipelined(calls, mget)

    def _pipelined(self, calls: Sequence[tuple[str, Sequence[Any], Sequence[Any]]],
                   mget: Sequence[str] | None) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for name, keys, args in calls:
            pipe.evalsha(self._scripts[name].sha, len(keys), *keys, *args)
        if mget is not None:  # a plain read after the scripts, in the same round trip (``mget``)
            if mget:
                # Raw: a cluster pipeline blocks .mget(); the keys share one slot (keys.py).
                pipe.execute_command("MGET", *mget)
            else:
                return [*pipe.execute(), []]
        return pipe.execute()
