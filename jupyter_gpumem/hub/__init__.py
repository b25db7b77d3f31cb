"""The jupyter-gpumem JupyterHub service and per-group settings: every user's GPU memory against their
budget on one admin page and one Prometheus target. docs/hub.md.

The service is ``python -m jupyter_gpumem.hub``, run by JupyterHub as a managed service with a role granting
``access:servers``; it reads each running single-user server's ``/api/gpumem/v1`` through the hub's proxy.
``group_environment`` makes a ``pre_spawn_hook`` that sets ``JUPYTER_GPUMEM_*`` per JupyterHub group (and, for
container spawners, the NVIDIA container toolkit's memory limit); ``driver_ceilings`` the hooks that have the driver
enforce each user's ceiling on their server's cgroup (LocalProcessSpawner, SystemdSpawner).
"""

from jupyter_gpumem.hub.cgroups import DriverCeilings, driver_ceilings
from jupyter_gpumem.hub.groups import UserCeiling, group_environment, group_settings, toolkit_environment, user_ceiling
from jupyter_gpumem.hub.rows import Row, rows_of_server

__all__ = [
    "DriverCeilings",
    "Row",
    "UserCeiling",
    "driver_ceilings",
    "group_environment",
    "group_settings",
    "rows_of_server",
    "toolkit_environment",
    "user_ceiling",
]
