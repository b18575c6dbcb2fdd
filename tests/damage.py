"""Hypothesis strategies that damage a state file, and the mission they damage.

Each strategy takes a file's good bytes and gives a damaged version: cut short, a byte
flipped, bytes that are not UTF-8, random bytes, empty, huge, nested deeper than a parser
takes, or (for JSON and YAML) a value of the wrong type somewhere inside. `FOLDER` stands
for "a folder where the file should be".
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import strategies as st

from harness.cli.app import cli

ROOT = Path(__file__).resolve().parent.parent
FOLDER = b"<a folder>"  # the file is replaced by a folder

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8)


def _cut(data: bytes, at: int) -> bytes:
    return data[: at % (len(data) + 1)]


def _flip(data: bytes, at: int, bit: int) -> bytes:
    if not data:
        return b"\x80"
    i = at % len(data)
    return data[:i] + bytes([data[i] ^ (1 << bit)]) + data[i + 1:]


def _insert(data: bytes, at: int, junk: bytes) -> bytes:
    i = at % (len(data) + 1)
    return data[:i] + junk + data[i:]


def bytes_damage(good: bytes) -> st.SearchStrategy[bytes]:
    """Damage any file can suffer: cut, flipped, not UTF-8, random, empty, huge, a folder."""
    at = st.integers(0, 1 << 20)
    return st.one_of(
        st.builds(_cut, st.just(good), at),
        st.builds(_flip, st.just(good), at, st.integers(0, 7)),
        st.builds(_insert, st.just(good), at,
                  st.sampled_from([b"\xff\xfe", "caf\xe9".encode("latin-1"), b"\x00", b"\xc3"])),
        st.binary(max_size=200),
        st.sampled_from([b"", FOLDER, good * 100, b"\n" * 100_000]),
    )


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _nodes(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _nodes(item, (*path, i))
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


def _retyped(good: Any, at: int, new: Any) -> Any:
    nodes = _nodes(good)
    return _replace(good, nodes[at % len(nodes)], new)


def _deep(opener: str, closer: str, depth: int) -> bytes:
    return (opener * depth + closer * depth).encode()


def json_damage(good: bytes) -> st.SearchStrategy[bytes]:
    """Bytes damage, and JSON of the wrong shape: a value anywhere retyped, nested deep, huge."""
    parsed = json.loads(good)
    return st.one_of(
        bytes_damage(good),
        st.builds(_retyped, st.just(parsed), st.integers(0, 10_000), json_values).map(
            lambda v: json.dumps(v).encode()),
        st.sampled_from([_deep("[", "]", 100_000), _deep('{"a":', "}", 50_000)[:-1] + b"1}",
                         b'{"a": ' + b"9" * 5000 + b"}", b'"' + b"x" * 1_000_000 + b'"']),
    )


def jsonl_damage(good: bytes) -> st.SearchStrategy[bytes]:
    """One line of a JSON-lines file damaged as JSON, the others kept; or the whole file."""
    lines = good.splitlines(keepends=True)

    def one_line(i: int, bad: bytes) -> bytes:
        i %= len(lines)
        return b"".join(lines[:i]) + bad + b"\n" + b"".join(lines[i + 1:])

    per_line = st.integers(0, 1000).flatmap(
        lambda i: json_damage(lines[i % len(lines)].rstrip(b"\n")).map(
            lambda bad: one_line(i, bad)))
    return st.one_of(per_line, bytes_damage(good))


def yaml_damage(good: bytes) -> st.SearchStrategy[bytes]:
    """Bytes damage, and YAML with a value anywhere retyped, nested deep or huge."""
    parsed = yaml.safe_load(good) or {}
    return st.one_of(
        bytes_damage(good),
        st.builds(_retyped, st.just(parsed), st.integers(0, 10_000), json_values).map(
            lambda v: yaml.safe_dump(v).encode()),
        st.sampled_from([_deep("[", "]", 50_000), b"a: " + b"9" * 5000 + b"\n",
                         b"prompt: {feature_chars: -1}\n", b"max_attempts: .nan\n"]),
    )


def write(path: Path, content: bytes) -> None:
    """Put damaged `content` where `path` was (a folder for FOLDER)."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == FOLDER:
        path.mkdir()
    else:
        path.write_bytes(content)


def snapshot(*folders: Path) -> dict[str, bytes | None]:
    """Every file under `folders` (lock files aside: a lock's label names its last holder)."""
    out: dict[str, bytes | None] = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in [*filenames, *dirnames]:
                path = Path(dirpath) / name
                if name.endswith(".lock") or path.is_dir():
                    out.setdefault(str(path), None) if path.is_dir() else None
                    continue
                out[str(path)] = path.read_bytes()
    return out


def invoke(state: Path, identity: Path, args: list[str], input: bytes | None = None):
    """The CLI in-process against `state`, the identity folder set as run.sh would; the
    environment as it was afterwards (a run loads `<state>/env` into it)."""
    saved = dict(os.environ)
    try:
        return CliRunner().invoke(
            cli, ["--state", str(state), "--workdir", str(state.parent), *args], input=input,
            env={"HARNESS_IDENTITY_DIR": str(identity)})
    finally:
        os.environ.clear()
        os.environ.update(saved)
