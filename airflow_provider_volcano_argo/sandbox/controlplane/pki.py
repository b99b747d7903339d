"""Self-signed certificates and keys for the sandbox: one CA, a serving cert, the service-account signing key."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


class Pki:
    """A CA that signs serving certificates for 127.0.0.1 / localhost, written into ``directory``."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.ca_key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "volcano-argo-sandbox-ca")])
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .sign(self.ca_key, hashes.SHA256())
        )
        self.ca_file = _write(directory / "ca.crt", self.ca_cert.public_bytes(serialization.Encoding.PEM))
        sa_key = _key()
        self.sa_key_file = _write(directory / "sa.key", _pem_key(sa_key))
        self.sa_pub_file = _write(
            directory / "sa.pub",
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        )

    def serving(self, name: str) -> tuple[Path, Path]:
        """Issue a serving certificate for 127.0.0.1 and localhost; return (cert file, key file)."""
        key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.DNSName("kubernetes.default.svc"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )
        cert_file = _write(self.directory / f"{name}.crt", cert.public_bytes(serialization.Encoding.PEM))
        key_file = _write(self.directory / f"{name}.key", _pem_key(key))
        return cert_file, key_file
