"""``python -m profstore`` runs the command line, like the ``profstore`` script."""

import sys

from profstore.cli.main import main

sys.exit(main())
