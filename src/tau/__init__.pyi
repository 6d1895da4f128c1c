"""What type checkers see of `tau`: its __init__.py resolves the SDK's names on first access
(PEP 562), so without this stub they would read as `object`. Kept beside it by hand: the names
are tau.sdk.PUBLIC's (tests/test_sdk_install.py checks both agree).
"""

from typing import Any

from tau.metric_log import log as log
from tau.metric_log import log_flush as log_flush
from tau.sdk.config import config as config
from tau.sdk.config import load_config as load_config
from tau.sdk.ctx import Ctx as Ctx
from tau.sdk.mounts import pvc_mount as pvc_mount
from tau.sdk.secrets import SecretRef as SecretRef
from tau.sdk.secrets import SecretSource as SecretSource
from tau.sdk.secrets import secret as secret
from tau.sdk.secrets import secret_from_env as secret_from_env
from tau.sdk.secrets import secret_from_file as secret_from_file
from tau.sdk.secrets import secret_ref as secret_ref
from tau.sdk.serve import ServeHandle as ServeHandle
from tau.sdk.serve import serve as serve
from tau.sdk.staging import call_staged_function as call_staged_function
from tau.sdk.staging import load_staged_function as load_staged_function
from tau.sdk.staging import load_staged_module as load_staged_module
from tau.sdk.workloads import eval as eval
from tau.sdk.workloads import train as train

__version__: str
SDK_NAMES: frozenset[str]
LOG_NAMES: frozenset[str]

def __getattr__(name: str) -> Any: ...
def __dir__() -> list[str]: ...
