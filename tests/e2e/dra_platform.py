"""What a TauGrid platform publishes for DRA GPUs, as plain objects (resource.k8s.io/v1).

tau only names the claim templates (tau.k8s.dra); the platform owns the rest: the GPU
DeviceClass, a ResourceSlice per GPU node (published by the DRA driver, here by the test
through the admin client, since KWOK's fake nodes run no driver) and, in each workspace
namespace, one ResourceClaimTemplate per GPU count (`full-gpu`, `ds-<N>gpus`). Pure, so a fast
test validates every object against the Kubernetes 1.37 schemas.
"""

from __future__ import annotations

from typing import Any

from tau.k8s import dra

API = "resource.k8s.io/v1"
#: The NVIDIA DRA driver's name, which its DeviceClass also carries.
DRIVER = "gpu.nvidia.com"
DEVICE_CLASS = "gpu.nvidia.com"

Obj = dict[str, Any]


def device_class() -> Obj:
    """Every device the GPU driver publishes."""
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def resource_slice(node: str, gpus: int) -> Obj:
    """The node's GPUs, one device each, in a one-slice pool named after the node."""
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": "NVIDIA H100 NVL"},
                "index": {"int": i},
            },
            "capacity": {"memory": {"value": "95Gi"}},
        }
        for i in range(gpus)
    ]
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def claim_template(namespace: str, gpus: int) -> Obj:
    """The template tau names for a pod of `gpus` GPUs: that many devices of one node."""
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": dra.claim_template(gpus), "namespace": namespace},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": dra.CLAIM_NAME,
                            "exactly": {
                                "deviceClassName": DEVICE_CLASS,
                                "allocationMode": "ExactCount",
                                "count": gpus,
                            },
                        }
                    ]
                }
            }
        },
    }
