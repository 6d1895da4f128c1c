"""`python -m tau.portal.cli` is `taugrid-portal`."""

from tau.portal.cli import main

raise SystemExit(main())
