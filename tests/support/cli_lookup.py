"""CLI lookup helpers shared by the cli tests."""

from __future__ import annotations

import io
import json
import sys

from profstore.cli.main import main

from tests.support.cli_fixture import RMS_OP


def rms(tokens: int, hidden: int = 7168, **extra) -> dict:
    return {**extra, "op": RMS_OP,
            "args": [{"shape": [tokens, hidden], "dtype": "bfloat16"},
                     {"shape": [hidden], "dtype": "bfloat16"}, 1e-6],
            "outputs": [{"shape": [tokens, hidden], "dtype": "bfloat16"}]}



def lookup_lines(capsys, db: str, text: str, *options: str, version: str = "v0.18"):
    path = io.StringIO(text)
    sys_stdin, sys.stdin = sys.stdin, path
    try:
        code = main(["lookup", "--db", db, "--version", version, *options, "-"])
    finally:
        sys.stdin = sys_stdin
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err



def brief(answer: dict) -> tuple:
    return (answer["id"], answer["latency_us"], answer["source"], answer["reason"])

