"""Kubeconfig files: the one `minik up` writes for its cluster, merging it into a user's kubeconfig, and reading
the server a kubeconfig points at.

A kubeconfig is YAML with three named lists (clusters, users, contexts) and a ``current-context``; minik's
entries are all named after the cluster. Files are written atomically with mode 0600, as kubectl does, because a
kubeconfig may hold credentials.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from minik.pki.files import write_private

Config = dict[str, Any]


class KubeconfigError(Exception):
    """A kubeconfig that cannot be read or does not say where the server is."""


def for_cluster(name: str, server: str, *, ca_data: bytes | None = None, token: str | None = None,
                client_cert: bytes | None = None, client_key: bytes | None = None) -> Config:
    """A kubeconfig with one cluster, one user and one context, all called ``name``, and that context current;
    with the CA that signs the server's certificate, and the user's bearer token or client certificate and key
    when given."""
    cluster: dict[str, Any] = {"server": server}
    if ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(ca_data).decode()
    user: dict[str, str] = {"token": token} if token else {}
    if client_cert and client_key:
        user["client-certificate-data"] = base64.b64encode(client_cert).decode()
        user["client-key-data"] = base64.b64encode(client_key).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }


def write(path: Path, config: Config) -> None:
    """Write ``config`` to ``path`` atomically (a temporary file renamed over it), readable by the owner only."""
    write_private(path, yaml.safe_dump(config, default_flow_style=False, sort_keys=False).encode())


def read(path: Path) -> Config:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KubeconfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise KubeconfigError(f"{path}: {exc.strerror or exc}") from None
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise KubeconfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(config, dict):
        raise KubeconfigError(f"{path}: not a kubeconfig (expected a mapping)")
    return config


def user_kubeconfig_path() -> Path:
    """The kubeconfig kubectl uses by default: the first file in $KUBECONFIG, else ~/.kube/config."""
    for part in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if part:
            return Path(part).expanduser()
    return Path.home() / ".kube" / "config"


def env_paths() -> list[Path]:
    """The files $KUBECONFIG lists (colon-separated, empty entries skipped); [] when it is unset or empty."""
    return [Path(part).expanduser() for part in os.environ.get("KUBECONFIG", "").split(os.pathsep) if part]


def load_merged(paths: list[Path]) -> Config:
    """The files of a $KUBECONFIG list merged as kubectl merges them: files that do not exist are skipped; of the
    clusters, users and contexts of one name the first file's wins; the current context (and the preferences) come
    from the first file that sets it. File references are made absolute against their own file's directory."""
    merged: Config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for path in dict.fromkeys(paths):
        if not path.exists():
            continue
        config = absolute_paths(read(path), path.parent)
        for section in ("clusters", "users", "contexts"):
            taken = {e.get("name") for e in merged[section]}
            for entry in config.get(section) or []:
                if isinstance(entry, dict) and entry.get("name") not in taken:
                    merged[section].append(entry)
                    taken.add(entry.get("name"))
        for key in ("current-context", "preferences"):
            if not merged.get(key) and config.get(key):
                merged[key] = config[key]
    return merged


def _upsert(entries: Any, entry: dict[str, Any]) -> list[dict[str, Any]]:
    kept = [e for e in (entries or []) if isinstance(e, dict) and e.get("name") != entry["name"]]
    return [*kept, entry]


def merge(path: Path, cluster: Config) -> bool:
    """Merge the entries of ``cluster`` (a config from ``for_cluster``) into the kubeconfig at ``path``, replacing
    entries of the same names and keeping every other one. The context becomes current only if none is set.
    Returns whether it was made current."""
    config: Config = read(path) if path.exists() else {"apiVersion": "v1", "kind": "Config", "preferences": {}}
    for section in ("clusters", "users", "contexts"):
        for entry in cluster[section]:
            config[section] = _upsert(config.get(section), entry)
    made_current = not config.get("current-context")
    if made_current:
        config["current-context"] = cluster["current-context"]
    write(path, config)
    return made_current


def remove_cluster(path: Path, own: Config) -> bool:
    """Remove from the kubeconfig at ``path`` the cluster, user and context that ``merge`` put there from ``own``
    (the config of one cluster, from ``for_cluster``), recognised by their name and the CA or the token ``own``
    holds, so that another cluster's entries of the same name stay; a current context that was the removed one
    is unset. Whether anything was removed."""
    if not path.exists():
        return False
    name = own.get("current-context")
    config = read(path)

    def body(conf: Config, section: str, field: str) -> dict[str, Any]:
        for entry in conf.get(section) or []:
            if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get(field), dict):
                return dict(entry[field])
        return {}

    ca = body(own, "clusters", "cluster").get("certificate-authority-data")
    token = body(own, "users", "user").get("token")
    if not name or not ((ca and body(config, "clusters", "cluster").get("certificate-authority-data") == ca) or
                        (token and body(config, "users", "user").get("token") == token)):
        return False
    for section in ("clusters", "users", "contexts"):
        config[section] = [e for e in config.get(section) or [] if not (isinstance(e, dict) and e.get("name") == name)]
    if config.get("current-context") == name:
        config["current-context"] = ""
    write(path, config)
    return True


@dataclass(frozen=True)
class Endpoint:
    """Where a kubeconfig's context points: the server URL, a bearer token if any, the default namespace."""

    server: str
    token: str | None = None
    namespace: str = "default"
    ca_data: bytes | None = None
    """The PEM CA the server's certificate must chain to (https); None: the system's trust store."""
    insecure_skip_tls_verify: bool = False
    client_cert: bytes | None = None
    """The user's PEM client certificate and key (``minik kubeconfig --user``), when it has no token."""
    client_key: bytes | None = None

    def ssl_context(self) -> ssl.SSLContext | bool | None:
        """What aiohttp's ``ssl=`` takes for this endpoint: a context trusting ``ca_data`` (and presenting the
        client certificate, if any), False to skip verification (insecure-skip-tls-verify), None for the default
        (or plain http)."""
        if not self.server.startswith("https://"):
            return None
        if self.insecure_skip_tls_verify and not self.client_cert:
            return False
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH,
                                             cadata=self.ca_data.decode() if self.ca_data else None)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.insecure_skip_tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert and self.client_key:
            _load_client_certificate(context, self.client_cert, self.client_key)
        return context if (self.ca_data or self.client_cert) else None


def _load_client_certificate(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``ssl`` loads certificates from files only: they go through a private temporary directory."""
    with tempfile.TemporaryDirectory(prefix="minik-kubeconfig-") as directory:
        cert_path, key_path = Path(directory) / "client.crt", Path(directory) / "client.key"
        write_private(cert_path, cert)
        write_private(key_path, key)
        context.load_cert_chain(str(cert_path), str(key_path))


def _named(config: Config, section: str, name: str, field: str) -> dict[str, Any]:
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(field)
            return value if isinstance(value, dict) else {}
    raise KubeconfigError(f'{section[:-1]} "{name}" is not in the kubeconfig')


def endpoint(path: Path, context: str | None = None) -> Endpoint:
    """The server, token and namespace of ``context`` (default: the current context) in the kubeconfig."""
    return endpoint_of(absolute_paths(read(path), path.parent), context, str(path))


def endpoint_of(config: Config, context: str | None = None, source: str = "kubeconfig") -> Endpoint:
    """The endpoint of ``context`` (default: the current one) in a loaded ``config`` whose file references are
    absolute (``absolute_paths``); ``source`` names where the config came from, in messages."""
    name = context or config.get("current-context")
    if not name:
        raise KubeconfigError(f"{source}: no current context is set")
    ctx = _named(config, "contexts", str(name), "context")
    cluster = _named(config, "clusters", str(ctx.get("cluster", "")), "cluster")
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f'{source}: cluster "{ctx.get("cluster", "")}" has no server')
    user: dict[str, Any] = {}
    if ctx.get("user"):
        try:
            user = _named(config, "users", str(ctx["user"]), "user")
        except KubeconfigError:
            user = {}
    token = user.get("token")
    namespace = ctx.get("namespace")
    return Endpoint(server, token if isinstance(token, str) and token else None,
                    namespace if isinstance(namespace, str) and namespace else "default",
                    _data(source, cluster, "certificate-authority"),
                    cluster.get("insecure-skip-tls-verify") is True,
                    _data(source, user, "client-certificate"), _data(source, user, "client-key"))


#: the fields of a cluster and of a user that name files, relative to the kubeconfig that holds them
FILE_FIELDS = {"clusters": ("cluster", ("certificate-authority",)),
               "users": ("user", ("client-certificate", "client-key"))}


def absolute_paths(config: Config, base: Path) -> Config:
    """``config`` with the files its clusters and users name made absolute against ``base`` (the directory of the
    kubeconfig), as kubectl resolves them in each file before merging several."""
    for section, (field, names) in FILE_FIELDS.items():
        for entry in config.get(section) or []:
            body = entry.get(field) if isinstance(entry, dict) else None
            if not isinstance(body, dict):
                continue
            for name in names:
                value = body.get(name)
                if isinstance(value, str) and value:
                    body[name] = str(base / Path(value).expanduser())
    return config


def _data(source: str, entry: dict[str, Any], field: str) -> bytes | None:
    """An entry's ``FIELD-data`` (base64), or the contents of the file ``FIELD`` names (an absolute path)."""
    data = entry.get(f"{field}-data")
    if isinstance(data, str) and data:
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise KubeconfigError(f"{source}: {field}-data is not base64") from None
    file = entry.get(field)
    if isinstance(file, str) and file:
        try:
            return Path(file).read_bytes()
        except OSError as exc:
            raise KubeconfigError(f"{source}: cannot read {field} {file}: {exc.strerror or exc}") from None
    return None
