"""`python -m index` is the `spanindex` command."""

import sys

from index.cli import main

sys.exit(main())
