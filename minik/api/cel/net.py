"""Kubernetes' ip(), cidr() and url() CEL libraries, with each value carried as a string.

Kubernetes gives these functions opaque CEL types; this runtime's Python functions can only return plain CEL
values, so an IP is carried as its canonical text, a CIDR as its text and a URL as its text, and the methods are
declared on strings. Rules written for Kubernetes compile and answer the same; what differs is only that string
methods would also apply to these values, and ``type(ip('1.2.3.4'))`` is ``string``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cel_expr_python import cel

T = cel.Type
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(text: str) -> Address:
    """Go's netip.ParseAddr as Kubernetes uses it: no zone, no IPv4-mapped IPv6."""
    if "%" in text:
        raise ValueError(f'IP address with zone value is not allowed: "{text}"')
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f'IP Address "{text}" parse error during conversion from string: ParseAddr("{text}"): '
                         "unable to parse IP") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{text}" is not allowed')
    return address


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if "/" not in text:
        raise ValueError(f'network address parse error during conversion from string: netip.ParsePrefix("{text}"): '
                         "no '/'")
    _address(text.split("/", 1)[0])
    return ipaddress.ip_network(text, strict=False)


def is_ip(text: str) -> bool:
    try:
        _address(text)
    except ValueError:
        return False
    return True


def is_cidr(text: str) -> bool:
    try:
        _network(text)
    except ValueError:
        return False
    return True


def _ip(text: str) -> str:
    return str(_address(text))


def _is_canonical(text: str) -> bool:
    return str(_address(text)) == text


def _contains_ip(cidr: str, ip: str) -> bool:
    return _address(ip) in _network(cidr)


def _contains_cidr(cidr: str, other: str) -> bool:
    inner, outer = _network(other), _network(cidr)
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def _cidr_ip(cidr: str) -> str:
    return str(_address(cidr.split("/", 1)[0]))


def _masked(cidr: str) -> str:
    return str(_network(cidr))


def is_url(text: str) -> bool:
    """Go's url.ParseRequestURI: an absolute URL or an absolute path."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return text.startswith("/") or bool(parts.scheme)


def _url(text: str) -> str:
    if not is_url(text):
        raise ValueError(f"URL parse error during conversion from string: parse \"{text}\": invalid URI for request")
    return text


def _host(text: str) -> str:
    return urlsplit(text).netloc.rsplit("@", 1)[-1]


def _hostname(text: str) -> str:
    host = _host(text)
    if host.startswith("["):
        return host[1:host.index("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _port(text: str) -> str:
    host = _host(text)
    if host.startswith("["):
        rest = host[host.index("]") + 1:] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.rsplit(":", 1)[1] if host.count(":") == 1 else ""


def _escaped_path(text: str) -> str:
    return urlsplit(text).path


def _query(text: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(text).query, keep_blank_values=True)


def functions() -> list[Any]:
    s = T.STRING

    def one(name: str, overload: str, result: Any, params: list[Any], impl: Callable[..., Any],
            member: bool = False) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(overload, result, params, is_member=member, impl=impl)])

    return [
        cel.FunctionDecl("ip", [cel.Overload("k8s_ip_string", s, [s], impl=_ip),
                                cel.Overload("k8s_cidr_ip", s, [s], is_member=True, impl=_cidr_ip)]),
        one("ip.isCanonical", "k8s_ip_is_canonical", T.BOOL, [s], _is_canonical),
        one("family", "k8s_ip_family", T.INT, [s], lambda a: _address(a).version, True),
        one("isUnspecified", "k8s_ip_is_unspecified", T.BOOL, [s], lambda a: _address(a).is_unspecified, True),
        one("isLoopback", "k8s_ip_is_loopback", T.BOOL, [s], lambda a: _address(a).is_loopback, True),
        one("isLinkLocalMulticast", "k8s_ip_is_link_local_multicast", T.BOOL, [s],
            lambda a: _address(a).is_multicast and _address(a).is_link_local
            if _address(a).version == 6 else str(_address(a)).startswith("224.0.0."), True),
        one("isLinkLocalUnicast", "k8s_ip_is_link_local_unicast", T.BOOL, [s],
            lambda a: _address(a).is_link_local and not _address(a).is_multicast, True),
        one("isGlobalUnicast", "k8s_ip_is_global_unicast", T.BOOL, [s],
            lambda a: not (_address(a).is_unspecified or _address(a).is_loopback or _address(a).is_multicast or
                           _address(a).is_link_local or str(_address(a)) == "255.255.255.255"), True),
        one("cidr", "k8s_cidr_string", s, [s], lambda a: (_network(a), a)[1]),
        one("containsIP", "k8s_cidr_contains_ip", T.BOOL, [s, s], _contains_ip, True),
        one("containsCIDR", "k8s_cidr_contains_cidr", T.BOOL, [s, s], _contains_cidr, True),
        one("masked", "k8s_cidr_masked", s, [s], _masked, True),
        one("prefixLength", "k8s_cidr_prefix_length", T.INT, [s], lambda a: _network(a).prefixlen, True),
        one("url", "k8s_url_string", s, [s], _url),
        one("getScheme", "k8s_url_scheme", s, [s], lambda a: urlsplit(a).scheme, True),
        one("getHost", "k8s_url_host", s, [s], _host, True),
        one("getHostname", "k8s_url_hostname", s, [s], _hostname, True),
        one("getPort", "k8s_url_port", s, [s], _port, True),
        one("getEscapedPath", "k8s_url_escaped_path", s, [s], _escaped_path, True),
        one("getQuery", "k8s_url_query", T.Map(s, T.List(s)), [s], _query, True),
    ]
