"""Raw API responses as plain data. Pure.

tau reads every response raw (`tau.kube.rest`) and decodes the JSON itself: the typed client
models reject objects they do not fully understand (fields of newer API versions, partial
objects), and tau only ever needs the plain data.
"""

from __future__ import annotations

import json
from typing import Any


def decode(response: Any) -> dict[str, Any]:
    """The JSON body of a raw response; {} when it is empty or not an object."""
    data = json.loads(response.data or b"{}")
    return data if isinstance(data, dict) else {}
