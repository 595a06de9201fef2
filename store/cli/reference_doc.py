"""``python -m profstore.cli.reference_doc > docs/cli.md`` writes the generated CLI reference
(kept apart from ``reference`` so that the parser's modules never import the command line)."""

import sys

from profstore.cli.main import build_parser
from profstore.cli.reference import render_markdown

if __name__ == "__main__":
    sys.stdout.write(render_markdown(build_parser()))
