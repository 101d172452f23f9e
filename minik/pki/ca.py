"""The cluster's certificate authority and the certificates it signs (the ``cryptography`` package).

One CA per cluster, made on the first start and kept in DATA_DIR/pki (keys mode 0600). It signs the API server's
serving certificate (for every name and address it is reached at; re-issued when that set changes or it nears
expiry), the API server's client certificate for kubelets, and each node's kubelet serving certificate. Keys are
ECDSA P-256: quick to make, and accepted by Go (kubectl), OpenSSL and Python alike.

A CA is identified by the SHA-256 of its public key's DER SubjectPublicKeyInfo, written ``sha256:<hex>``: the
same pin as kubeadm's ``--discovery-token-ca-cert-hash``.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from minik.pki import pkicache
from minik.pki.files import private_dir, write_private

CA_DAYS = 3650
CERT_DAYS = 365
#: a certificate with less time than this left is issued again at start-up
RENEW_BEFORE = datetime.timedelta(seconds=pkicache.RENEW_BEFORE_SECONDS)

PrivateKey = ec.EllipticCurvePrivateKey
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class CertificateError(ValueError):
    """A certificate, key or request that cannot be read or must not be signed."""


def new_key() -> PrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def load_cert(pem: bytes) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError as exc:
        raise CertificateError(f"not a PEM certificate: {exc}") from None


def load_key(pem: bytes) -> PrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise CertificateError(f"not a PEM private key: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError("the private key is not an ECDSA key")
    return key


def public_key_hash(cert: x509.Certificate) -> str:
    """``sha256:<hex>`` of the certificate's DER SubjectPublicKeyInfo (kubeadm's CA pin)."""
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def matches_hash(cert: x509.Certificate, pinned: str) -> bool:
    """Whether ``cert``'s public key is the pinned one (``sha256:<hex>``, or the bare hex)."""
    expected = pinned.strip().lower()
    if not expected.startswith("sha256:"):
        expected = "sha256:" + expected
    return hmac.compare_digest(public_key_hash(cert).encode(), expected.encode())


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def subject_names(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    """The DNS names and IP addresses in the certificate's subjectAltName."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    return set(san.get_values_for_type(x509.DNSName)), {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}


def split_names(names: list[str] | tuple[str, ...] | set[str]) -> tuple[list[str], list[IpAddress]]:
    """Host names and IP addresses apart (each deduplicated, in order)."""
    dns: list[str] = []
    ips: list[IpAddress] = []
    for name in names:
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            if name and name not in dns:
                dns.append(name)
        else:
            if ip not in ips:
                ips.append(ip)
    return dns, ips


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key (None when the requester keeps the key, as with a CSR)."""

    cert: x509.Certificate
    key: PrivateKey | None = None

    @property
    def cert_pem(self) -> bytes:
        return cert_pem(self.cert)

    @property
    def key_pem(self) -> bytes:
        assert self.key is not None
        return key_pem(self.key)


class CertificateAuthority:
    """A CA certificate and its key; signs leaf certificates."""

    def __init__(self, cert: x509.Certificate, key: PrivateKey) -> None:
        self.cert = cert
        self.key = key

    @classmethod
    def create(cls, common_name: str = "minik-ca") -> CertificateAuthority:
        key = new_key()
        now = _now()
        name = _name(common_name)
        cert = (x509.CertificateBuilder()
                .subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                             crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return cls(cert, key)

    @property
    def cert_pem(self) -> bytes:
        return cert_pem(self.cert)

    @property
    def hash(self) -> str:
        """The pin a joining node checks the CA against (``sha256:<hex>``)."""
        return public_key_hash(self.cert)

    def issue(self, common_name: str, organizations: tuple[str, ...] = (), *, names: tuple[str, ...] = (),
              server: bool = False, client: bool = False, public_key: ec.EllipticCurvePublicKey | None = None,
              days: int = CERT_DAYS) -> Issued:
        """A leaf certificate for ``common_name`` (organizations are Kubernetes' groups) valid for ``names``
        (host names and IP addresses), for TLS servers, clients or both. A new key is made unless
        ``public_key`` is given (a signed request's)."""
        if not (server or client):
            raise ValueError("a certificate must be for a server, a client or both")
        key = None
        if public_key is None:
            key = new_key()
            public_key = key.public_key()
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + \
                 ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
        now = _now()
        builder = (x509.CertificateBuilder()
                   .subject_name(_name(common_name, organizations)).issuer_name(self.cert.subject)
                   .public_key(public_key).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(min(now + datetime.timedelta(days=days), self.cert.not_valid_after_utc))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                key_encipherment=False, data_encipherment=False, key_agreement=False,
                                                key_cert_sign=False, crl_sign=False, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                  critical=False))
        dns, ips = split_names(names)
        if dns or ips:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName(n) for n in dns] + [x509.IPAddress(ip) for ip in ips]), critical=False)
        return Issued(builder.sign(self.key, hashes.SHA256()), key)

    def sign_request(self, csr_pem: bytes, common_name: str, organizations: tuple[str, ...], *,
                     server: bool = False, client: bool = False) -> Issued:
        """Sign a PEM certificate request whose subject must be exactly ``common_name`` in ``organizations``;
        its subjectAltNames are kept (a kubelet serving certificate names the node's addresses)."""
        try:
            csr = x509.load_pem_x509_csr(csr_pem)
        except ValueError as exc:
            raise CertificateError(f"not a PEM certificate request: {exc}") from None
        if not csr.is_signature_valid:
            raise CertificateError("the certificate request's signature is not valid")
        public_key = csr.public_key()
        if not isinstance(public_key, ec.EllipticCurvePublicKey):
            raise CertificateError("the certificate request's key is not an ECDSA key")
        cns = [a.value for a in csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        orgs = tuple(str(a.value) for a in csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
        if cns != [common_name] or sorted(orgs) != sorted(organizations):
            raise CertificateError(f'the certificate request must be for CN={common_name} '
                                   f'O={",".join(organizations)}')
        names: tuple[str, ...] = ()
        try:
            san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            names = tuple(san.get_values_for_type(x509.DNSName)) + \
                tuple(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
        except x509.ExtensionNotFound:
            pass
        return self.issue(common_name, organizations, names=names, server=server, client=client,
                          public_key=public_key)


    def sign_csr(self, request: x509.CertificateSigningRequest, usages: list[str], seconds: int) -> bytes:
        """A PEM certificate for a CertificateSigningRequest's x509 request, as Kubernetes' signers make it: the
        request's subject, key and subjectAltNames, the key usages and extended key usages its spec asks for,
        valid from five minutes ago for ``seconds`` (within the CA's own validity)."""
        now = _now()
        key_usage = {name: False for name in ("digital_signature", "content_commitment", "key_encipherment",
                                              "data_encipherment", "key_agreement", "key_cert_sign", "crl_sign",
                                              "encipher_only", "decipher_only")}
        for usage, bit in (("digital signature", "digital_signature"), ("key encipherment", "key_encipherment"),
                           ("content commitment", "content_commitment"), ("data encipherment", "data_encipherment"),
                           ("key agreement", "key_agreement")):
            if usage in usages:
                key_usage[bit] = True
        extended = [oid for usage, oid in (("client auth", ExtendedKeyUsageOID.CLIENT_AUTH),
                                           ("server auth", ExtendedKeyUsageOID.SERVER_AUTH)) if usage in usages]
        builder = (x509.CertificateBuilder()
                   .subject_name(request.subject).issuer_name(self.cert.subject)
                   .public_key(request.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(min(now + datetime.timedelta(seconds=seconds), self.cert.not_valid_after_utc))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(**key_usage), critical=True)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                  critical=False))
        if extended:
            builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
        try:
            names = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            builder = builder.add_extension(names, critical=False)
        except x509.ExtensionNotFound:
            pass
        return cert_pem(builder.sign(self.key, hashes.SHA256()))


def certificate_request(key: PrivateKey, common_name: str, organizations: tuple[str, ...],
                        names: tuple[str, ...] = ()) -> bytes:
    """A PEM certificate request for ``key`` (what a joining node sends for its serving certificate)."""
    builder = x509.CertificateSigningRequestBuilder().subject_name(_name(common_name, organizations))
    dns, ips = split_names(names)
    if dns or ips:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName(n) for n in dns] + [x509.IPAddress(ip) for ip in ips]), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


# -- on disk ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pki:
    """The files of DATA_DIR/pki."""

    dir: Path

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"


def load_or_create_ca(pki: Pki) -> CertificateAuthority:
    """The cluster's CA from DATA_DIR/pki, made on the first start."""
    private_dir(pki.dir)
    if pki.ca_cert.exists() and pki.ca_key.exists():
        return CertificateAuthority(load_cert(pki.ca_cert.read_bytes()), load_key(pki.ca_key.read_bytes()))
    ca = CertificateAuthority.create()
    write_private(pki.ca_key, key_pem(ca.key))
    write_private(pki.ca_cert, ca.cert_pem)
    return ca


def _still_good(cert: x509.Certificate, ca: CertificateAuthority, names: tuple[str, ...]) -> bool:
    if cert.issuer != ca.cert.subject or cert.not_valid_after_utc - _now() < RENEW_BEFORE:
        return False
    try:
        cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, Exception):  # noqa: BLE001 - any verification failure means "issue again"
        return False
    dns, ips = subject_names(cert)
    want_dns, want_ips = split_names(names)
    return set(want_dns) <= dns and {str(ip) for ip in want_ips} <= ips


def ensure_certificate(pki: Pki, ca: CertificateAuthority, name: str, common_name: str,
                       organizations: tuple[str, ...] = (), *, names: tuple[str, ...] = (), server: bool = False,
                       client: bool = False) -> tuple[Path, Path]:
    """DATA_DIR/pki/NAME.crt and .key, kept when they are still signed by ``ca``, cover ``names`` and are not
    near expiry; issued again otherwise. Returns the two paths."""
    cert_path, key_path = pki.cert(name), pki.key(name)
    if cert_path.exists() and key_path.exists():
        try:
            cert = load_cert(cert_path.read_bytes())
            if _still_good(cert, ca, names):
                load_key(key_path.read_bytes())
                pkicache.remember(pki.dir, name, names, cert.not_valid_after_utc.timestamp(), ca.hash)
                return cert_path, key_path
        except CertificateError:
            pass
    issued = ca.issue(common_name, organizations, names=names, server=server, client=client)
    write_private(key_path, issued.key_pem)
    write_private(cert_path, issued.cert_pem)
    pkicache.remember(pki.dir, name, names, issued.cert.not_valid_after_utc.timestamp(), ca.hash)
    return cert_path, key_path
