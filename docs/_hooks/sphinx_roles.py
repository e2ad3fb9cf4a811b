"""Griffe extension: the code's docstrings are reST (``:func:`x```, ``double backquotes``);
the API pages render them as Markdown code spans, so they read as code instead of raw roles."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const):`~?\.?([^`]+)`")
DOUBLE = re.compile(r"``([^`]+)``")


def markdown(text: str) -> str:
    return DOUBLE.sub(r"`\1`", ROLE.sub(r"`\1`", text))


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
