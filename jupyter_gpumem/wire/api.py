"""The server extension's ``GET /api/gpumem/v1`` body, version 1, as typed values generated from its reference,
``schemas/api.v1.json`` (``generated/api_v1.py``, docs/server.md): the server encodes it (server.handlers), the hub
service reads it (hub.rows). A NotRequired field is one added after the first release: a body from an older server
lacks it, and ``BODY.problem`` fills in its default (docs/protocol.md, "Versioning and releases mixing")."""

from jupyter_gpumem.wire.generated.api_v1 import KernelStatus, ServerBody
from jupyter_gpumem.wire.schemas import Schema

# The generated types this module's callers use.
__all__ = ["KernelStatus", "ServerBody"]

VERSION = 1
PATH = "/api/gpumem/v1"

BODY: Schema[ServerBody] = Schema("api.v1.json", "a /api/gpumem/v1 body", "body")
