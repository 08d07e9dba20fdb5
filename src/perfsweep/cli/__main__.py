"""``python -m perfsweep.cli``: the ``perfsweep`` command."""

import sys

from perfsweep.cli import main

sys.exit(main())
