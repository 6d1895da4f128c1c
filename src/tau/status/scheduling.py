"""Read the scheduler's "no node fits" message reason by reason, each with its own cause.

Pure. A pod the scheduler cannot place carries one message (its PodScheduled=False condition
and the FailedScheduling event), in the format of kube-scheduler's FitError (Kubernetes 1.37,
pkg/scheduler/framework/types.go):

    0/<N> nodes are available: <PreFilter message>. preemption: ...
    0/<N> nodes are available: <n> <reason>, <m> <reason>. preemption: ...

A PreFilter rejection (the volumebinding plugin's missing or unbound claim) applies to every
node and has no count; Filter reasons are counted per node and sorted. What each reason means
decides who can fix it: a claim that does not exist is the platform's storage, not a node pool;
a taint or selector mismatch is the preset against the node pools; too little free capacity is
busy or too small nodes. Reasons this module does not know stay "other", quoted as written.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Cause(enum.StrEnum):
    """What one scheduler reason says is in the way."""

    #: volumebinding PreFilter: `persistentvolumeclaim "x" not found`.
    CLAIM_MISSING = "claim-missing"
    #: volumebinding PreFilter: `pod has unbound immediate PersistentVolumeClaims`.
    CLAIM_UNBOUND = "claim-unbound"
    #: A claim that exists but cannot be used: lost its volume, being deleted, or no volume can
    #: be bound or reached from the nodes (binding, PV node affinity, zone, free storage).
    VOLUME = "volume"
    #: tainttoleration: the nodes carry taints the pod does not tolerate.
    TAINT = "taint"
    #: nodeaffinity / nodename: no node has the labels the pod selects.
    SELECTOR = "selector"
    #: noderesources: not enough free cpu, memory, GPUs or pod slots.
    RESOURCES = "resources"
    #: Pod topology spread and (anti-)affinity constraints.
    TOPOLOGY = "topology"
    #: Cordoned or not-ready nodes.
    NODES_UNAVAILABLE = "nodes-unavailable"
    #: dynamicresources: no device can be allocated for a ResourceClaim (the DRA phase's).
    DEVICES = "devices"
    #: Anything else (ports, volume limits, a reason of a newer scheduler).
    OTHER = "other"


@dataclass(frozen=True)
class Reason:
    """One reason of the message.

    Attributes:
        cause: what it means.
        text: the reason as the scheduler wrote it (without its node count).
        nodes: how many nodes gave it; None for a PreFilter reason, which holds for all.
        claim: the PersistentVolumeClaim it names, or "".
    """

    cause: Cause
    text: str
    nodes: int | None = None
    claim: str = ""


@dataclass(frozen=True)
class Reading:
    """The message, read: how many nodes the scheduler considered and why none fits."""

    total: int | None
    reasons: tuple[Reason, ...]

    def causes(self) -> tuple[Cause, ...]:
        """Each cause once, in the order the reasons name them."""
        return tuple(dict.fromkeys(r.cause for r in self.reasons))


_HEAD = re.compile(r"^\s*0/(\d+) nodes are available:\s*(.*)$", re.DOTALL)
#: Where the PostFilter (preemption) part starts; it only repeats the reasons for preemption.
_POSTFILTER = re.compile(r"\s(?:pod group )?preemption:\s")
_COUNTED = re.compile(r"^(\d+)\s+(.+)$", re.DOTALL)
#: Filter reasons are joined by ", " and each starts with its node count.
_SPLIT = re.compile(r",\s+(?=\d+\s)")
_CLAIM = re.compile(r'persistentvolumeclaim "([^"]+)"')

#: (substring of the lower-cased reason, cause), first match wins; all from the 1.37
#: scheduler's plugins. A missing claim (`persistentvolumeclaim "x" not found`, volumebinding's
#: podHasPVCs) is matched first, in `classify`.
_MARKERS: tuple[tuple[str, Cause], ...] = (
    # volumebinding.PreFilter: an Immediate claim no volume is bound to yet.
    ("unbound immediate persistentvolumeclaims", Cause.CLAIM_UNBOUND),
    # volumebinding.podHasPVCs: a generic ephemeral volume's claim is not created yet.
    ("waiting for ephemeral volume controller", Cause.CLAIM_UNBOUND),
    # volumebinding.podHasPVCs: ClaimLost, or a claim being deleted.
    ("bound to non-existent persistentvolume", Cause.VOLUME),
    ("is being deleted", Cause.VOLUME),
    # volumebinding's ConflictReasons and volumezone.
    ("persistent volumes to bind", Cause.VOLUME),
    ("persistentvolume's node affinity", Cause.VOLUME),
    ("enough free storage", Cause.VOLUME),
    ("bound to non-existent pv", Cause.VOLUME),
    ("available volume zone", Cause.VOLUME),
    # tainttoleration: "node(s) had untolerated taint(s)" (1.37), "... taint {k: v}" (older).
    ("untolerated taint", Cause.TAINT),
    ("taints that the pod didn't tolerate", Cause.TAINT),
    # nodeaffinity and nodename.
    ("node affinity/selector", Cause.SELECTOR),
    ("requested node name", Cause.SELECTOR),
    # noderesources: "Insufficient <resource>", "Too many pods".
    ("insufficient ", Cause.RESOURCES),
    ("too many pods", Cause.RESOURCES),
    # podtopologyspread and interpodaffinity.
    ("topology spread constraints", Cause.TOPOLOGY),
    ("pod affinity rules", Cause.TOPOLOGY),
    ("pod anti-affinity rules", Cause.TOPOLOGY),
    ("anti-affinity rules", Cause.TOPOLOGY),
    # nodeunschedulable: cordoned nodes, or nodes whose conditions are unknown.
    ("were unschedulable", Cause.NODES_UNAVAILABLE),
    ("unknown conditions", Cause.NODES_UNAVAILABLE),
    # dynamicresources.
    ("cannot allocate all claims", Cause.DEVICES),
    ("resourceclaim", Cause.DEVICES),
)


def classify(text: str) -> Cause:
    """The cause one reason names."""
    lowered = text.lower()
    if "persistentvolumeclaim" in lowered and "not found" in lowered:
        return Cause.CLAIM_MISSING
    for marker, cause in _MARKERS:
        if marker in lowered:
            return cause
    return Cause.OTHER


def _reason(text: str, nodes: int | None) -> Reason:
    text = text.strip().rstrip(".").strip()
    claim = _CLAIM.search(text)
    return Reason(classify(text), text, nodes, claim.group(1) if claim else "")


def read(message: str) -> Reading:
    """Read one FailedScheduling message; a message of another shape is one "other" reason
    (or whatever cause its text names).
    """
    head = _HEAD.match(message)
    if head is None:
        return Reading(None, (_reason(message, None),) if message.strip() else ())
    total, body = int(head.group(1)), head.group(2)
    body = _POSTFILTER.split(body, maxsplit=1)[0].strip().rstrip(".")
    reasons = []
    for part in _SPLIT.split(body):
        counted = _COUNTED.match(part.strip())
        if counted:
            reasons.append(_reason(counted.group(2), int(counted.group(1))))
        elif part.strip():
            reasons.append(_reason(part, None))
    return Reading(total, tuple(reasons))


#: The phase hint for each cause: what is in the way, and whose it is.
_HINTS: dict[Cause, str] = {
    Cause.CLAIM_MISSING: (
        "the claim {claims} does not exist in namespace {ns}: the platform provisions claims, "
        "and a Ready workspace can still lack one"
    ),
    Cause.CLAIM_UNBOUND: (
        "no volume is bound to the claim {claims} in namespace {ns} yet: the platform "
        "provisions volumes"
    ),
    Cause.VOLUME: (
        "the pod's volumes cannot be bound or reached from the nodes: storage, not node pools"
    ),
    Cause.TAINT: "the nodes carry taints the pod does not tolerate (the preset's tolerations)",
    Cause.SELECTOR: "no node has the labels the pod selects (node selector or affinity)",
    Cause.RESOURCES: "no node has enough free {resources} now: nodes are busy or too small",
    Cause.TOPOLOGY: "topology spread or pod affinity rules leave no node",
    Cause.NODES_UNAVAILABLE: "nodes are cordoned or not ready",
    Cause.DEVICES: "no device can be allocated for the pod's ResourceClaims (DRA allocation)",
    Cause.OTHER: "the scheduler finds no node for the pod: its reasons are quoted above",
}
#: Storage causes first: they hold for every node, so node-level reasons are beside the point.
_FIRST = (Cause.CLAIM_MISSING, Cause.CLAIM_UNBOUND, Cause.VOLUME)


def ordered(reading: Reading) -> tuple[Cause, ...]:
    """The reading's causes, storage first, then as the scheduler listed them."""
    causes = reading.causes()
    return tuple(c for c in _FIRST if c in causes) + tuple(c for c in causes if c not in _FIRST)


def quoted(names: list[str] | tuple[str, ...]) -> str:
    """Claim names as the scheduler quotes them: "a", "b"."""
    return ", ".join(f'"{n}"' for n in dict.fromkeys(names)) or "(unnamed)"


def claims_of(reading: Reading, cause: Cause, mounted: tuple[str, ...]) -> tuple[str, ...]:
    """The claims a cause is about: those its reasons name, else every claim the pod mounts
    (the unbound-claims reason names none).
    """
    named = tuple(dict.fromkeys(r.claim for r in reading.reasons if r.cause is cause and r.claim))
    return named or mounted


def hint(reading: Reading, namespace: str, mounted: tuple[str, ...] = ()) -> str:
    """One line saying what each cause of the reading is, storage causes first."""
    resources = ", ".join(
        dict.fromkeys(
            r.text.split(" ", 1)[1] if r.text.lower().startswith("insufficient ") else "pod slots"
            for r in reading.reasons
            if r.cause is Cause.RESOURCES
        )
    )
    lines = [
        _HINTS[cause].format(
            claims=quoted(claims_of(reading, cause, mounted)), ns=namespace, resources=resources
        )
        for cause in ordered(reading)
    ]
    return "; ".join(lines) or _HINTS[Cause.OTHER]
