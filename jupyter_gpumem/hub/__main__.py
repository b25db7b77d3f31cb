"""``python -m jupyter_gpumem.hub``: the JupyterHub service (docs/hub.md)."""

import asyncio
import contextlib

from jupyter_gpumem.hub.service import main

# JupyterHub stops its managed services with SIGINT: a normal end, not an error to print.
with contextlib.suppress(KeyboardInterrupt):
    asyncio.run(main())
