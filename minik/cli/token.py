"""`minik token create / list / delete`: join and view tokens (Kubernetes bootstrap tokens, kept as Secrets in
kube-system), and the node credentials joins handed out. Works against any cluster an admin kubeconfig reaches.
"""

from __future__ import annotations

import datetime

import click

from minik.api import tokens
from minik.api.errors import StatusError
from minik.api.timestamps import rfc3339
from minik.cli.common import Session, fail, target_options
from minik.cli.output import align, human_duration
from minik.client import Client

#: the join command `minik up` prints carries a token of its own, as kubeadm init's does: valid for a day, made
#: again when less than an hour is left, the expired ones removed
UP_TOKEN_DESCRIPTION = "the join command of minik up"
UP_TOKEN_TTL = datetime.timedelta(hours=24)
UP_TOKEN_MIN_LEFT = datetime.timedelta(hours=1)


async def up_join_token(client: Client) -> str:
    """The node-role token for the join command `minik up` prints: the one it made before while it has an hour
    left, else a new one; expired ones it made are deleted."""
    now = datetime.datetime.now(datetime.UTC)
    listed = await client.list("secrets", tokens.NAMESPACE)
    found = None
    for secret in listed.get("items") or []:
        bootstrap = tokens.read_bootstrap_secret(secret)
        if bootstrap is None or bootstrap.description != UP_TOKEN_DESCRIPTION or bootstrap.role != "node":
            continue
        if bootstrap.expired(now):
            try:
                await client.delete("secrets", tokens.BOOTSTRAP_PREFIX + bootstrap.id, tokens.NAMESPACE)
            except StatusError as exc:
                if exc.code != 404:
                    raise
        elif found is None and bootstrap.expiration is not None and bootstrap.expiration - now > UP_TOKEN_MIN_LEFT:
            found = f"{bootstrap.id}.{bootstrap.secret}"
    if found is not None:
        return found
    value = tokens.new_bootstrap_token()
    await client.create("secrets", tokens.bootstrap_secret(value, "node", UP_TOKEN_TTL, UP_TOKEN_DESCRIPTION, now),
                        tokens.NAMESPACE)
    return value


async def revoke_up_join_tokens(client: Client) -> None:
    """Delete every token `minik up` made for its join command (an older minik wrote them into a console file
    others could read)."""
    listed = await client.list("secrets", tokens.NAMESPACE, field_selector=f"type={tokens.BOOTSTRAP_TYPE}")
    for secret in listed.get("items") or []:
        bootstrap = tokens.read_bootstrap_secret(secret)
        if bootstrap is not None and bootstrap.description == UP_TOKEN_DESCRIPTION:
            try:
                await client.delete("secrets", tokens.BOOTSTRAP_PREFIX + bootstrap.id, tokens.NAMESPACE)
            except StatusError as exc:
                if exc.code != 404:
                    raise


def _ttl(_ctx: click.Context, _param: click.Parameter, value: str) -> datetime.timedelta:
    try:
        return tokens.parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _ca_hash(session: Session) -> str | None:
    data = session.endpoint.ca_data
    if not data:
        return None
    from minik.pki.ca import CertificateError, load_cert, public_key_hash

    try:
        return public_key_hash(load_cert(data))
    except CertificateError:
        return None


@click.group()
def token() -> None:
    """Tokens to join nodes (--role node) or read the cluster (--role view), and node credentials."""


@token.command("create")
@target_options
@click.option("--ttl", default="24h", show_default=True, callback=_ttl,
              help="How long the token is valid (e.g. 30m, 24h, 7d; 0 for never).")
@click.option("--role", type=click.Choice(tokens.ROLES), default="node", show_default=True,
              help="node: joins a machine (`minik node join`); view: reads everything but Secrets.")
@click.option("--description", default="", help="A note shown by `minik token list`.")
@click.option("--print-join-command", is_flag=True, help="Print the whole `minik node join` command only.")
def create(ttl: datetime.timedelta, role: str, description: str, print_join_command: bool) -> None:
    """Create a token; it is printed once and cannot be shown again."""
    session = Session.current()
    value = tokens.new_bootstrap_token()
    secret = tokens.bootstrap_secret(value, role, ttl or None, description)

    async def main() -> None:
        async with session.client() as client:
            await client.create("secrets", secret, tokens.NAMESPACE)

    session.run(main)
    from minik.kubelet.join import join_command

    ca_hash = _ca_hash(session)
    command = join_command(session.endpoint.server, value, ca_hash) if ca_hash else None
    if print_join_command:
        if command is None:
            raise fail("the kubeconfig has no certificate-authority-data: the CA hash for a join is unknown")
        click.echo(command)
        return
    click.echo(value)
    if role == "node" and command is not None:
        click.echo(f"minik: join a machine with (the server address must be one it reaches):\n  {command}",
                   err=True)


def _rows(secrets: list[dict], now: datetime.datetime) -> list[list[str]]:
    rows = []
    for secret in secrets:
        bootstrap = tokens.read_bootstrap_secret(secret)
        if bootstrap is not None:
            if bootstrap.expiration is None:
                ttl, expires = "<forever>", "<never>"
            else:
                left = (bootstrap.expiration - now).total_seconds()
                ttl = human_duration(left) if left > 0 else "<expired>"
                expires = rfc3339(bootstrap.expiration.timestamp())
            rows.append([bootstrap.id, bootstrap.role, ttl, expires, bootstrap.description or "<none>"])
            continue
        credential = tokens.read_node_credential_secret(secret)
        if credential is not None:
            rows.append([credential.id, "node-credential", "<forever>", "<never>", f"node {credential.node}"])
    return rows


@token.command("list")
@target_options
def list_tokens() -> None:
    """List join and view tokens, and node credentials (their ids; secrets are never shown)."""
    session = Session.current()

    async def main() -> list[dict]:
        async with session.client() as client:
            listed = await client.list("secrets", tokens.NAMESPACE)
        return [s for s in listed.get("items") or []
                if s.get("type") in (tokens.BOOTSTRAP_TYPE, tokens.NODE_CREDENTIAL_TYPE)]

    rows = _rows(session.run(main), datetime.datetime.now(datetime.UTC))
    if not rows:
        click.echo("No tokens found.", err=True)
        return
    for line in align([["ID", "ROLE", "TTL", "EXPIRES", "DESCRIPTION"], *rows]):
        click.echo(line)


async def _delete(client: Client, token_id: str) -> str:
    for prefix, what in ((tokens.BOOTSTRAP_PREFIX, "bootstrap token"),
                         (tokens.NODE_CREDENTIAL_PREFIX, "node credential")):
        try:
            await client.delete("secrets", prefix + token_id, tokens.NAMESPACE)
        except StatusError as exc:
            if exc.code == 404:
                continue
            raise
        return f'{what} "{token_id}" deleted'
    raise fail(f'token "{token_id}" not found')


@token.command("delete")
@target_options
@click.argument("ids", nargs=-1, required=True, metavar="ID|TOKEN...")
def delete(ids: tuple[str, ...]) -> None:
    """Revoke tokens or node credentials by id (or by the whole token): they stop working at once."""
    token_ids = []
    for given in ids:
        token_id = given.split(".", 1)[0]
        if not tokens.TOKEN_ID.fullmatch(token_id):
            raise fail(f'"{given}" is not a token id ([a-z0-9]{{6}}) nor a token')
        token_ids.append(token_id)
    session = Session.current()

    async def main() -> list[str]:
        async with session.client() as client:
            return [await _delete(client, token_id) for token_id in token_ids]

    for line in session.run(main):
        click.echo(line)
