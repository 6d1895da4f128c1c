"""Name grammars of the Kubernetes API, written once. Pure.

Every rule that checks a name tau will put into an object (a PVC, a Secret, an env variable, a
label) uses these, so a name tau accepts is one the API server accepts too.
"""

from __future__ import annotations

import re

# RFC 1123 label: object names such as PVCs, namespaces of length ≤ 63, container names.
DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# RFC 1123 subdomain: dotted labels (Secret names, label-key prefixes), up to 253 characters.
DNS_1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
# RFC 1035 label: names that become DNS names of Services, so they must start with a letter.
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# A C identifier: the environment variable names tau renders.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The key of a Secret or ConfigMap entry.
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
# A label value (may be empty) and the name part of a label key; both ≤ 63 characters.
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
