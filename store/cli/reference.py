"""Descriptions and examples for every verb, and the generated CLI reference (docs/cli.md).

The examples live in one table so that ``profstore VERB --help`` and docs/cli.md show the
same text; ``apply_help`` attaches them after every verb module registered its parser, and
tests/cli/test_cli_reference.py fails when a verb has no example or docs/cli.md is stale
(regenerate with ``python -m profstore.cli.reference_doc > docs/cli.md``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

EXAMPLES: dict[str, str] = {
    "db upgrade": "profstore db upgrade --db perf.db",
    "db checkpoint": "profstore db checkpoint --db perf.db",
    "ingest": "profstore ingest ../shared/perfdb --db perf.db",
    "versions": "profstore versions --db perf.db --json",
    "kernels": "profstore kernels --db perf.db --version v0.18",
    "regimes": "profstore regimes --db perf.db --version v0.18 --kernel DispatchFFNCombine",
    "duplicates": "profstore duplicates --db perf.db --version v0.18 --kernel LightningIndexer",
    "rejected": "profstore rejected --db perf.db --version v0.18 --limit 5",
    "sql": "profstore sql --db perf.db \"SELECT kernel_type, count(*) FROM sample "
           "WHERE profile_id = :p GROUP BY 1\" --param p=1",
    "lookup": "profstore lookup --db perf.db --version v0.18 leaves.jsonl > answers.jsonl",
    "explain": "profstore explain --db perf.db --version v0.18 '{\"op\": \"aten.mm.default\", "
               "\"args\": [{\"shape\": [200, 7168], \"dtype\": \"bfloat16\"}, "
               "{\"shape\": [7168, 4096], \"dtype\": \"bfloat16\"}], "
               "\"outputs\": [{\"shape\": [200, 4096], \"dtype\": \"bfloat16\"}]}'",
    "replay": "profstore replay ../shared/workloads/dsv3_decode.json --db perf.db "
              "--version v0.18 --num-devices 16 --ep-size 16",
    "holdout": "profstore holdout --db perf.db --version v0.18 --path moe_fused",
    "report": "profstore report --db perf.db --version v0.18 --format html -o report.html",
    "plot": "profstore plot --db perf.db --version v0.18 --kernel RmsNorm -o rmsnorm.png",
    "serve": "profstore serve --db perf.db --port 8042 --open",
    "tensorcast": "profstore tensorcast throughput-optimizer --db perf.db --version v0.18 "
                  "--tensorcast-root ../shared/third_party/msmodeling-84fec85 "
                  "--stats-json stats.json -- qwen3_32b_config/ --device "
                  "ATLAS_800_A3_752T_128G_DIE --num-devices 8 --input-length 1024 "
                  "--output-length 256 --tp-sizes 4 8 --tpot-limit 50 --batch-range 1 64 -j 2",
    "analytic-check": "profstore analytic-check stats.json --plot analytic.png",
    "gaps": "profstore gaps ../shared/workloads/qwen3_32b_decode.json --db perf.db "
            "--version v0.18 --budget 4 -o plan.csv",
    "diff": "profstore diff --db perf.db --from v0.15 --to v0.18 "
            "--workload ../shared/workloads/dsv3_decode.json --plot ratios.png",
    "calibrate": "profstore calibrate ../shared/workloads/dsv3_decode.json --db perf.db "
                 "--version v0.18 --share 0.2 --trials 20",
    "demo": "profstore demo --dir demo",
}
"""One runnable example per verb path (``"db upgrade"`` for a nested verb)."""


def verbs(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[
        tuple[str, argparse.ArgumentParser]]:
    """Every leaf verb of the parser as (``"db upgrade"``, its parser), in help order."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            path = f"{prefix}{name}"
            nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            if nested:
                yield from verbs(sub, f"{path} ")
            else:
                yield path, sub


def _help_of(parser: argparse.ArgumentParser, path: str) -> str | None:
    name = path.split()[-1]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help
    return None


def apply_help(parser: argparse.ArgumentParser) -> None:
    """Give every verb a description (its one-line help when it has none) and its example."""
    parents = {"": parser}
    for path, sub in verbs(parser):
        parent_path = " ".join(path.split()[:-1])
        parent = parents.get(parent_path) or _parser_at(parser, parent_path)
        parents[parent_path] = parent
        if not sub.description:
            help_text = _help_of(parent, path)
            sub.description = f"{help_text[0].upper()}{help_text[1:]}." if help_text else None
        example = EXAMPLES.get(path)
        if example:
            sub.epilog = f"example:\n  {example}"
            sub.formatter_class = argparse.RawDescriptionHelpFormatter


def _parser_at(parser: argparse.ArgumentParser, path: str) -> argparse.ArgumentParser:
    for name in path.split():
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


class _FixedWidth(argparse.RawDescriptionHelpFormatter):
    """The terminal's width must not change the generated reference."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=100)


def render_markdown(parser: argparse.ArgumentParser) -> str:
    """docs/cli.md: every verb's usage, description, options and example."""
    out = ["# profstore command-line reference", "",
           "Generated from the argument parser by `python -m profstore.cli.reference_doc > "
           "docs/cli.md`; a test fails when it is out of date.", ""]
    for path, sub in verbs(parser):
        usage = _FixedWidth(sub.prog)
        usage.add_usage(sub.usage, sub._actions, sub._mutually_exclusive_groups, prefix="")
        out += [f"## `profstore {path}`", "", sub.description or "", "", "```text",
                usage.format_help().strip(), "```", ""]
        rows = [_option_row(a) for a in sub._actions if a.dest != "help"]
        if rows:
            out += ["| argument | meaning |", "|---|---|", *rows, ""]
        if sub.epilog:
            out += ["Example:", "", "```bash", EXAMPLES[path], "```", ""]
    return "\n".join(out).rstrip() + "\n"


def _option_row(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or str(action.metavar or action.dest)
    if action.option_strings and action.nargs != 0:
        names += f" {action.metavar or action.dest.upper()}"
    meaning = (action.help or "").replace("|", "\\|")
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        meaning += f" (one of: {', '.join(map(str, action.choices))})"
    return f"| `{names}` | {meaning} |"
