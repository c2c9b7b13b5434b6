"""``python -m screenbai ...``: the ``screenbai`` command, where the console script is not on PATH."""

from screenbai.cli import main

raise SystemExit(main())
