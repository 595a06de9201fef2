"""Every verb is documented: a description and a runnable example in its --help, and a
docs/cli.md that matches the parser (regenerate: python -m profstore.cli.reference_doc)."""

from __future__ import annotations

import shlex

import pytest
from profstore.cli.main import build_parser, split_passthrough
from profstore.cli.reference import EXAMPLES, render_markdown, verbs

from tests.support.paths import REPO

pytestmark = pytest.mark.no_database


def test_every_verb_has_a_description_and_an_example_in_its_help():
    parser = build_parser()
    missing = [path for path, sub in verbs(parser)
               if not sub.description or "example:" not in sub.format_help()]
    assert missing == []


def test_every_example_is_a_valid_command_line_of_its_verb():
    parser = build_parser()
    known = dict(verbs(parser))
    assert set(EXAMPLES) == set(known)
    for path, example in EXAMPLES.items():
        words = shlex.split(example.split(" > ")[0])
        assert words[0] == "profstore" and " ".join(words[1:1 + len(path.split())]) == path
        parsed = parser.parse_args(split_passthrough(words[1:])[0])
        assert parsed.handler is known[path].get_default("handler"), path


def test_docs_cli_md_is_the_generated_reference():
    written = (REPO / "docs" / "cli.md").read_text()
    assert written == render_markdown(build_parser()), (
        "docs/cli.md is stale: python -m profstore.cli.reference_doc > docs/cli.md")


def test_every_option_of_every_verb_is_in_the_reference():
    written = (REPO / "docs" / "cli.md").read_text()
    for path, sub in verbs(build_parser()):
        section = written.split(f"## `profstore {path}`", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in section or f", {option}" in section, (path, option)
