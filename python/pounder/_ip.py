"""IP addresses: which are this machine's loopback. Here, not in ``pounder.traffic`` (whose face
re-exports it), so that an agent on a node checks its targets without importing the traffic
package (URL files, access logs, scenarios), which it never uses."""

from __future__ import annotations

import ipaddress

from pounder._errors import public


@public
def is_loopback(ip: str) -> bool:
    """Whether an IP address (``%zone`` and IPv4-mapped IPv6 allowed) is this machine's loopback;
    ValueError when ``ip`` is no IP address."""
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback
