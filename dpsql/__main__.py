"""``python -m dpsql``: the ``dpsql`` command (:mod:`dpsql.faces.cli`)."""

import sys

from dpsql.faces.cli import main

sys.exit(main())
