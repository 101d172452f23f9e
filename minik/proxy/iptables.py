"""The proxy's NAT rules: one chain of its own in the nat table, jumped to from PREROUTING (connections from pods,
which arrive on a container bridge) and OUTPUT (connections from the node itself), holding one REDIRECT rule per
cluster IP, port and protocol to the local port of the proxy's listener for it.

The chain is named after the node and the process (``MINIK-`` and a hash), so that several proxies on one machine
(a `minik up` node and `minik node join` nodes) never touch each other's rules, and its jump rules carry a comment
naming the process. The whole chain is rewritten in one ``iptables-restore --noflush`` (atomic, and only when the
rules changed); stopping removes the jumps and the chain, and a proxy starting removes the chains of minik proxies
whose process is gone (one killed with SIGKILL cannot clean up after itself).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shlex
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

import structlog

log = structlog.get_logger("minik.proxy.iptables")

TABLE = "nat"
HOOKS = ("PREROUTING", "OUTPUT")
COMMENT_PREFIX = "minik proxy"
_JUMP = re.compile(r'^-A (PREROUTING|OUTPUT) .*--comment "?minik proxy pid=(\d+)[^"]*"? -j (MINIK-[0-9A-F]+)\s*$')


class IptablesError(Exception):
    pass


@dataclass(frozen=True, order=True)
class Redirect:
    """Connections to ``ip:port`` over ``protocol`` go to this machine's ``to_port``."""

    ip: str
    protocol: str
    port: int
    to_port: int
    comment: str = ""

    def rule(self, chain: str) -> str:
        proto = self.protocol.lower()
        comment = f' -m comment --comment "{self.comment}"' if self.comment else ""
        return (f"-A {chain} -d {self.ip}/32 -p {proto} -m {proto} --dport {self.port}{comment} "
                f"-j REDIRECT --to-ports {self.to_port}")


def chain_name(node: str, pid: int | None = None) -> str:
    digest = hashlib.sha1(f"{node}\0{os.getpid() if pid is None else pid}".encode()).hexdigest()[:12]
    return f"MINIK-{digest.upper()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: what iptables says when the rule or chain to remove does not exist; the nf_tables back end reports a rule deleted
#: by someone else between our listing and our delete as "RULE_DELETE failed (No such file or directory)"
_GONE = ("does a matching rule exist", "No chain/target/match by that name", "does not exist",
         "No such file or directory")


async def _run(*args: str, stdin: bytes | None = None) -> str:
    process = await asyncio.create_subprocess_exec(*args, stdin=asyncio.subprocess.PIPE,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate(stdin)
    if process.returncode != 0:
        raise IptablesError(f"{shlex.join(args)}: {err.decode(errors='replace').strip() or process.returncode}")
    return out.decode(errors="replace")


class NatChain:
    """The proxy's chain. ``await probe()`` says whether iptables can be used here at all."""

    def __init__(self, node: str, iptables: str = "iptables") -> None:
        self.node = node
        self.name = chain_name(node)
        self.iptables = iptables
        self.restore = f"{iptables}-restore"
        self.comment = f"{COMMENT_PREFIX} pid={os.getpid()} node={node}"
        self.applied: tuple[Redirect, ...] | None = None
        self.installed = False

    async def probe(self) -> str | None:
        """None when the nat table can be changed here; else why not (no iptables, not root...)."""
        if shutil.which(self.iptables) is None or shutil.which(self.restore) is None:
            return f"no {self.iptables} and {self.restore} on PATH"
        if os.geteuid() != 0:
            return "changing iptables rules needs root"
        try:
            await _run(self.iptables, "-w", "5", "-t", TABLE, "-S", "OUTPUT")
        except (IptablesError, OSError) as exc:
            return str(exc)
        return None

    async def install(self) -> None:
        """Remove dead proxies' chains, create ours (empty) and the jumps to it."""
        await self.remove_stale()
        await self._restore([])
        for hook in HOOKS:
            spec = ["-m", "comment", "--comment", self.comment, "-j", self.name]
            try:
                await _run(self.iptables, "-w", "5", "-t", TABLE, "-C", hook, *spec)
            except IptablesError:
                await _run(self.iptables, "-w", "5", "-t", TABLE, "-I", hook, "1", *spec)
        self.installed = True
        log.info("iptables chain installed", chain=self.name, node=self.node)

    async def apply(self, redirects: Iterable[Redirect]) -> bool:
        """Make the chain hold exactly these redirects; False when it already did (nothing run)."""
        wanted = tuple(sorted(set(redirects)))
        if wanted == self.applied:
            return False
        await self._restore(wanted)
        return True

    async def _restore(self, redirects: Iterable[Redirect]) -> None:
        lines = [f"*{TABLE}", f":{self.name} - [0:0]"]  # declaring the chain flushes it
        lines += [r.rule(self.name) for r in redirects]
        lines.append("COMMIT\n")
        await _run(self.restore, "-w", "5", "--noflush", stdin="\n".join(lines).encode())
        self.applied = tuple(redirects)

    async def uninstall(self) -> None:
        """Remove the jumps and the chain (nothing left of this proxy in the nat table)."""
        await self._remove(self.name)
        self.installed = False
        self.applied = None
        log.info("iptables chain removed", chain=self.name, node=self.node)

    async def _remove(self, chain: str) -> None:
        listing = await _run(self.iptables, "-w", "5", "-t", TABLE, "-S")
        for line in listing.splitlines():
            match = _JUMP.match(line)
            if match and match.group(3) == chain:
                await self._unless_gone("-D", *shlex.split(line)[1:])
        if f"-N {chain}" in listing.splitlines():
            await self._unless_gone("-F", chain)
            await self._unless_gone("-X", chain)

    async def _unless_gone(self, *args: str) -> None:
        """Run a removal; a rule or chain that is gone already (another proxy starting on this machine removed the
        same stale chain a moment before) is what was wanted, not an error."""
        try:
            await _run(self.iptables, "-w", "5", "-t", TABLE, *args)
        except IptablesError as exc:
            if not any(gone in str(exc) for gone in _GONE):
                raise

    async def remove_stale(self) -> list[str]:
        """Remove the chains of minik proxies whose process is gone; the chains removed."""
        listing = await _run(self.iptables, "-w", "5", "-t", TABLE, "-S")
        stale = sorted({m.group(3) for m in map(_JUMP.match, listing.splitlines())
                        if m and not _alive(int(m.group(2)))})
        for chain in stale:
            await self._remove(chain)
            log.info("removed the iptables chain of a proxy that is gone", chain=chain)
        return stale
