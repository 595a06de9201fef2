"""Database URLs: checked before anything is created, never shown with a password, and the
PostgreSQL connection settings every profstore engine gets.

A text whose start looks like a URL scheme (``sqlite:``, ``postgresql+psycopg:`` …) is a
URL and must parse as one: a one-slash ``postgresql+psycopg:/u:pw@host/db`` used to be
taken for a relative SQLite path (a file named after the password). Anything else is a
SQLite file path. See docs/adr/0103-connection-settings.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CONNECT_TIMEOUT_SECONDS = 10
"""PostgreSQL: how long a connection attempt may take before it fails (a server that accepts
TCP and never answers made every verb hang). ``?connect_timeout=N`` in the URL overrides it."""
APPLICATION_NAME = "profstore"
"""What ``pg_stat_activity.application_name`` shows for profstore's sessions (``?application_name=``
in the URL overrides it)."""
KEEPALIVE_SETTINGS = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
                      "keepalives_count": 3}
"""TCP keepalives: a peer that vanished (a network blip, a killed host) is noticed in about a
minute instead of the kernel's two hours, so a lock holder or a waiting lookup fails over."""
URL_BACKENDS = frozenset({"sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle",
                          "mssql"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):(.*)", re.S)
_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*:/*[^:/@]*:)[^/]*@")
"""The password of ``scheme://user:password@host`` (also with one slash): everything up to
the last ``@`` of the authority (an unencoded ``@`` in a password must not leave its tail
printed)."""


class InvalidDatabaseUrl(ValueError):
    """The ``--db`` text is a malformed URL; the message shows it without the password."""


def looks_like_url(text: str) -> bool:
    """Whether ``text`` starts with a database URL scheme (``name:`` or ``name+driver:``)."""
    match = _SCHEME.fullmatch(text)
    if match is None:
        return False
    scheme = match.group(1).lower()
    return "+" in scheme or scheme in URL_BACKENDS or match.group(2).startswith("//")


def normalize_url(url_or_path: str | Path) -> str:
    """A checked SQLAlchemy URL, or a plain file path made a SQLite URL. A malformed URL
    raises ``InvalidDatabaseUrl`` before anything (a file, a connection) is made."""
    text = str(url_or_path)
    if not looks_like_url(text):
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    check_url(text)
    return text


def check_url(text: str) -> None:
    """Raise ``InvalidDatabaseUrl`` unless ``text`` parses as ``scheme://…``."""
    from sqlalchemy.engine import make_url

    scheme, _, rest = text.partition(":")
    shown = redact_url(text)
    if not rest.startswith("//"):
        raise InvalidDatabaseUrl(f"invalid database URL {shown}: expected {scheme}://… "
                                 "(two slashes after the scheme)")
    authority = rest[2:].split("/", 1)[0]
    if authority.count("@") > 1:
        raise InvalidDatabaseUrl(f"invalid database URL {shown}: the user or password holds "
                                 "an unencoded '@' (write it as %40)")
    host_port = authority.rpartition("@")[2]
    port = host_port.rpartition(":")[2] if ":" in host_port.lstrip("[") else ""
    if port and not port.isdigit():
        raise InvalidDatabaseUrl(f"invalid database URL {shown}: port {port!r} is not a number")
    try:
        make_url(text)
    except Exception as exc:  # ArgumentError, ValueError: the parser's own words
        raise InvalidDatabaseUrl(f"invalid database URL {shown}: "
                                 f"{type(exc).__name__}") from None


def redact_url(url: str) -> str:
    """The URL with any password replaced, safe to print."""
    from sqlalchemy.engine import make_url

    if url.count("@") > 1 or not looks_like_url(url):
        return _PASSWORD.sub(r"\1***@", url)
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return _PASSWORD.sub(r"\1***@", url)


def postgres_connect_args(query: Any) -> dict[str, Any]:
    """The driver settings a PostgreSQL engine adds: those the URL's query does not set."""
    defaults: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_SECONDS,
                                "application_name": APPLICATION_NAME, **KEEPALIVE_SETTINGS}
    return {name: value for name, value in defaults.items() if name not in query}
