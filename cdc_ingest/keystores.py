"""Java key stores read into PEM text in memory: what a Java client is given as
``ssl.truststore.*`` / ``ssl.keystore.*`` (Kafka) or ``...CertificateKeyStoreUrl`` (MySQL's
Connector/J), for clients built on OpenSSL, which read PEM only.

- **PEM**: the file's text.
- **PKCS12**: read with ``cryptography``.
- **JKS** (Java's own format; its magic number tells it whatever the declared type): the
  JDK's ``keytool`` reads it (Java is installed wherever cdc-ingest runs: Spark needs it).
  Certificates only (a trust store): ``keytool -list -rfc``, which needs no password. With a
  private key: ``keytool -importkeystore`` into a PKCS12 file under a random password, in a
  directory only this user may enter, deleted as soon as it is read. Passwords go to keytool
  through its environment (``:env``), never on its command line.

Private keys leave as unencrypted PKCS#8 PEM text in memory; nothing here writes one to a
file that outlives the call or logs one.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import ssl
import subprocess
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
    pkcs12,
)

JKS_MAGIC = b"\xfe\xed\xfe\xed"
_PEM_CERT = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----\s*", re.S)
KEYTOOL_TIMEOUT_S = 60.0


class StoreError(ValueError):
    """A store that cannot be read: what is wrong and the fix, without the path's owner's
    secrets (the caller names the option and the file)."""


def _data(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise StoreError(f"cannot read {path} ({exc.strerror}). Fix: give a file this user "
                         "may read") from None


def kind_of(data: bytes, declared: str | None) -> str:
    """PEM, PKCS12 or JKS: what the bytes are (a JKS file declared PKCS12 is still JKS)."""
    if data[:4] == JKS_MAGIC:
        return "JKS"
    if data.lstrip().startswith(b"-----BEGIN"):
        return "PEM"
    return "PKCS12" if (declared or "").upper() != "JKS" else "JKS"


def trusted_certificates(path: str, declared: str | None, password: str | None) -> str:
    """The PEM text of every certificate of a trust store."""
    data = _data(path)
    kind = kind_of(data, declared)
    if kind == "PEM":
        text = data.decode("ascii", errors="replace")
    elif kind == "JKS":
        text = _keytool_list(path, password)
    else:
        text = _pkcs12(data, password)[0]
    certs = "".join(m.group(0).strip() + "\n" for m in _PEM_CERT.finditer(text))
    if not certs:
        raise StoreError(f"{path} holds no certificate. Fix: import the CA certificate "
                         "(keytool -importcert)")
    return certs


def identity(path: str, declared: str | None, password: str | None,
             key_password: str | None = None) -> tuple[str, str]:
    """(PEM certificate chain, PEM unencrypted private key) of a key store with one key."""
    data = _data(path)
    kind = kind_of(data, declared)
    if kind == "PEM":
        text = data.decode("ascii", errors="replace")
        return _pem_identity(text, key_password or password, path)
    if kind == "JKS":
        data, password = _jks_to_pkcs12(path, password, key_password)
    return _pkcs12(data, password, want_key=True)


def _pem_identity(text: str, password: str | None, where: str) -> tuple[str, str]:
    certs = "".join(m.group(0).strip() + "\n" for m in _PEM_CERT.finditer(text))
    found = re.search(r"-----BEGIN (?:ENCRYPTED |RSA |EC )?PRIVATE KEY-----.+?"
                      r"-----END (?:ENCRYPTED |RSA |EC )?PRIVATE KEY-----", text, re.S)
    if not certs or found is None:
        raise StoreError(f"{where} holds no {'certificate' if not certs else 'private key'}. "
                         "Fix: give the client's certificate chain and its private key")
    return certs, _unencrypted(found.group(0).encode(), password, where)


def pem_identity(chain: str, key: str, password: str | None, where: str) -> tuple[str, str]:
    """(chain, unencrypted key) of a PEM chain and key given as text."""
    return _pem_identity(chain + "\n" + key, password, where)


def _unencrypted(pem: bytes, password: str | None, where: str) -> str:
    # an unencrypted key is read as it is, a password given or not (as Java's PEM store)
    secret = password.encode() if password and b"ENCRYPTED" in pem[:100] else None
    try:
        key = load_pem_private_key(pem, secret)
    except (ValueError, TypeError):
        raise StoreError(f"the private key of {where} could not be opened (a wrong or "
                         "missing ssl.key.password, or not a key). Fix: check ssl.key.password"
                         ) from None
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def _pkcs12(data: bytes, password: str | None, want_key: bool = False) -> tuple[str, str]:
    try:
        loaded = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise StoreError("it could not be opened as PKCS12 (a wrong or missing password, or "
                         "not a key store). Fix: check the store's password and type") from None
    entries = ([loaded.cert] if loaded.cert else []) + list(loaded.additional_certs)
    certs = "".join(e.certificate.public_bytes(Encoding.PEM).decode() for e in entries)
    key = ""
    if want_key:
        if loaded.key is None:
            raise StoreError("it holds no private key. Fix: give the client's key store (its "
                             "key and certificate)")
        key = loaded.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                                       NoEncryption()).decode()
    return certs, key


def _keytool() -> str:
    found = shutil.which("keytool")
    if found is None:
        raise StoreError("it is a JKS key store, and reading one needs the JDK's keytool, "
                         "which is not on PATH. Fix: install a JDK (Spark needs one too), or "
                         "convert the store to PKCS12 or PEM")
    return found


def _run_keytool(args: list[str], env: dict[str, str]) -> str:
    # an empty line answers a password prompt (a trust store listed without its password)
    result = subprocess.run([_keytool(), *args], capture_output=True, text=True, check=False,
                            env={**os.environ, **env}, timeout=KEYTOOL_TIMEOUT_S, input="\n")
    if result.returncode != 0:
        said = (result.stdout + result.stderr).strip().splitlines()
        reason = next((line for line in said if "keytool error" in line), said[-1:] or [""])
        raise StoreError(f"keytool could not read the JKS store ({str(reason).strip()[:200]}). "
                         "Fix: check the store's password (and a key's own), and that the file "
                         "is a whole JKS store")
    return result.stdout


def _keytool_list(path: str, password: str | None) -> str:
    args = ["-list", "-rfc", "-keystore", path, "-storetype", "JKS"]
    env: dict[str, str] = {}
    if password:
        env["CDC_INGEST_STOREPASS"] = password
        args += ["-storepass:env", "CDC_INGEST_STOREPASS"]
    # no password: keytool asks, gets an empty line and lists, its integrity unchecked
    return _run_keytool(args, env)


def _key_alias(path: str, password: str) -> str:
    """The alias of the JKS store's one private key entry."""
    listed = _run_keytool(["-list", "-v", "-keystore", path, "-storetype", "JKS",
                           "-storepass:env", "CDC_INGEST_SRCPASS"],
                          {"CDC_INGEST_SRCPASS": password})
    aliases = re.findall(r"^Alias name: (.+)\n(?:.*\n){0,3}?Entry type: PrivateKeyEntry$",
                         listed, re.M)
    if len(aliases) != 1:
        raise StoreError(f"it holds {len(aliases)} private keys; a client uses one. Fix: "
                         "give a key store with the client's key only")
    return aliases[0]


def _jks_to_pkcs12(path: str, password: str | None, key_password: str | None
                   ) -> tuple[bytes, str]:
    """The JKS store as PKCS12 bytes, and the random password they are under."""
    if not password:
        raise StoreError("a JKS key store with a private key needs its password. Fix: set "
                         "ssl.keystore.password")
    out = secrets.token_hex(16)
    env = {"CDC_INGEST_SRCPASS": password, "CDC_INGEST_DESTPASS": out}
    keypass: list[str] = []
    if key_password and key_password != password:
        # a key under a password of its own is imported by its alias
        env["CDC_INGEST_KEYPASS"] = key_password
        keypass = ["-srcalias", _key_alias(path, password), "-srckeypass:env",
                   "CDC_INGEST_KEYPASS"]
    with tempfile.TemporaryDirectory(prefix="cdc-ingest-store-") as folder:
        os.chmod(folder, 0o700)
        target = str(Path(folder) / "store.p12")
        _run_keytool(["-importkeystore", "-noprompt", "-srckeystore", path,
                      "-srcstoretype", "JKS", "-srcstorepass:env", "CDC_INGEST_SRCPASS",
                      *keypass, "-destkeystore", target, "-deststoretype", "PKCS12",
                      "-deststorepass:env", "CDC_INGEST_DESTPASS"], env)
        data = Path(target).read_bytes()
    return data, out


def load_identity(context: ssl.SSLContext, certs: str, key: str, where: str) -> None:
    """Give ``context`` a client certificate and key through an in-memory file (OpenSSL
    reads paths only): nothing is written to a disk."""
    fd = os.memfd_create("cdc-ingest-client-key", os.MFD_CLOEXEC)
    try:
        os.write(fd, (certs + key).encode())
        context.load_cert_chain(f"/proc/self/fd/{fd}")
    except ssl.SSLError as exc:
        raise StoreError(f"{where}: the certificate does not match the key ({exc.reason}). "
                         "Fix: export both from one key entry") from None
    finally:
        os.close(fd)
