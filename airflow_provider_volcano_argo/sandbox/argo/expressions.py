"""The part of Argo's ``{{=expr}}`` expressions the sandbox evaluates.

A small part of expr-lang + sprig (argo-workflows v3.7.10 ``util/expr/env/env.go`` ``GetFuncMap``: the scope's
dotted names expanded into nested maps, ``util/expand``): string and integer literals, ``+``, member and index
access (``workflow.name``, ``inputs.parameters['x']``), ``sprig.upper``/``lower``/``trim``. Anything else raises
``Unresolved``.
"""

from __future__ import annotations

import re
from typing import Any


class Unresolved(Exception):
    """The expression cannot be evaluated here: written back as it was."""


def _go_upper(text: str) -> str:
    return "".join(c.upper() if len(c.upper()) == 1 else c for c in text)


def _go_lower(text: str) -> str:
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _strings_only(fn):
    def call(*args):
        if len(args) != 1 or not isinstance(args[0], str):
            raise Unresolved
        return fn(args[0])

    return call


SPRIG = {
    "upper": _strings_only(_go_upper),
    "lower": _strings_only(_go_lower),
    "trim": _strings_only(lambda s: s.strip(" \t\n\v\f\r")),
}


def expression_env(scope: dict[str, str]) -> dict[str, Any]:
    """``env.GetFuncMap(scope)``: dotted names as nested maps (``util/expand``: a parent with children dropped)."""
    keys = sorted(scope)
    env: dict[str, Any] = {}
    for i, key in enumerate(keys):
        if i + 1 < len(keys) and keys[i + 1].startswith(key + "."):
            continue
        node = env
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = scope[key]
    env["sprig"] = SPRIG
    return env


_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|(?P<num>\d+)|(?P<name>[A-Za-z_$][A-Za-z0-9_$]*)"
    r"|(?P<op>[.\[\](),+]))"
)


def _tokens(text: str) -> list[tuple[str, Any]]:
    tokens, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise Unresolved
        pos = match.end()
        kind = match.lastgroup
        value = match.group(kind)
        if kind == "str":
            value = _unquote(value[1:-1])
        tokens.append((kind, int(value) if kind == "num" else value))
    return tokens


_UNESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "a": "\a", "0": "\0"}


def _unquote(body: str) -> str:
    """Unescape the body of an expr-lang string literal (backslash escapes, ``u`` + 4 hex digits)."""
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_UNESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


class _Parser:
    def __init__(self, tokens: list[tuple[str, Any]], env: dict[str, Any]):
        self.tokens, self.pos, self.env = tokens, 0, env

    def peek(self, value: str) -> bool:
        return self.pos < len(self.tokens) and self.tokens[self.pos] == ("op", value)

    def take(self) -> tuple[str, Any]:
        if self.pos >= len(self.tokens):
            raise Unresolved
        self.pos += 1
        return self.tokens[self.pos - 1]

    def expect(self, value: str) -> None:
        if self.take() != ("op", value):
            raise Unresolved

    def sum(self) -> Any:
        value = self.postfix()
        while self.peek("+"):
            self.pos += 1
            right = self.postfix()
            if isinstance(value, str) and isinstance(right, str):
                value = value + right
            elif type(value) is int and type(right) is int:
                value = value + right
            else:
                raise Unresolved
        return value

    def primary(self) -> Any:
        kind, value = self.take()
        if kind in ("str", "num"):
            return value
        if kind == "name":
            if value not in self.env:  # expr.Compile with expr.Env: unknown name
                raise Unresolved
            return self.env[value]
        if (kind, value) == ("op", "("):
            inner = self.sum()
            self.expect(")")
            return inner
        raise Unresolved

    def postfix(self) -> Any:
        value = self.primary()
        while True:
            if self.peek("."):
                self.pos += 1
                kind, name = self.take()
                if kind != "name":
                    raise Unresolved
                value = self.member(value, name)
            elif self.peek("["):
                self.pos += 1
                key = self.sum()
                self.expect("]")
                value = self.member(value, key)
            elif self.peek("("):
                self.pos += 1
                args = []
                while not self.peek(")"):
                    args.append(self.sum())
                    if not self.peek(")"):
                        self.expect(",")
                self.pos += 1
                if not callable(value):
                    raise Unresolved
                value = value(*args)
            else:
                return value

    @staticmethod
    def member(value: Any, key: Any) -> Any:
        if isinstance(value, dict) and isinstance(key, str):
            return value.get(key)  # a map's missing key is nil in expr
        raise Unresolved  # fetching from nil or a string: a runtime error


def evaluate_expression(expression: str, env: dict[str, Any]) -> Any:
    """Evaluate the supported part of expr-lang; raise ``Unresolved`` for anything else or a nil result."""
    parser = _Parser(_tokens(expression), env)
    value = parser.sum()
    if parser.pos != len(parser.tokens) or value is None or callable(value):
        raise Unresolved
    return value
