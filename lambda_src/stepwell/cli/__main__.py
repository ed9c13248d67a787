"""`python -m stepwell.cli`: the `stepwell` command, as the console script runs it."""

from stepwell.cli import main

raise SystemExit(main())
