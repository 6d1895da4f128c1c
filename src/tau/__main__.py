"""`python -m tau` runs the CLI."""

from tau.cli import main

raise SystemExit(main())
