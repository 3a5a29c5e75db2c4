"""Authorization decisions of the HTTP transport, without I/O (MCP authorization, as a resource
server): the bearer credential in a header, the claims of a token whose signature is verified,
the scope each tool or resource needs, the `WWW-Authenticate` challenges and the Protected
Resource Metadata document (RFC 9728).

`runtime.http_auth` verifies signatures and fetches the issuer's keys; this module decides.
Must not import trio or do I/O.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

__all__ = [
    "ANONYMOUS",
    "SCOPES",
    "Identity",
    "MalformedAuthorizationError",
    "TokenRejectedError",
    "bearer_token",
    "challenge",
    "check_claims",
    "may_see",
    "metadata_paths",
    "protected_resource_metadata",
    "required_scope",
    "scope_lacking",
    "scoped_input_schema",
    "scopes_served",
    "source_scope",
    "sources_allowed",
    "sql_sources",
    "the_authorization",
]

# Scopes map to tool groups: every tool of a group needs its scope (deny by default: a tool or a
# resource named nowhere here needs a scope no token can hold).
SQL_READ: Final = "sql:read"
FILES_READ: Final = "files:read"
METRICS_READ: Final = "metrics:read"
SCOPES: Final = (SQL_READ, FILES_READ, METRICS_READ)
_TOOL_SCOPES: Final = {
    "read_only_sql": SQL_READ,
    "sql_schema": SQL_READ,
    "explain_sql": SQL_READ,
    "sandbox_fs_read": FILES_READ,
    "sandbox_fs_list": FILES_READ,
    "system_metrics": METRICS_READ,
}
# Resources by URI scheme: the schema resource (`postgres://<db>/schema`) is the SQL group's.
_RESOURCE_SCHEMES: Final = {"postgres": SQL_READ}
_UNGRANTABLE: Final = "mcp-suite:unmapped"

# RFC 6750 2.1: "Bearer" 1*SP b64token
_BEARER: Final = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*)")


class TokenRejectedError(Exception):
    """A token that must not be served: the reason is for the log and `error_description`."""


class MalformedAuthorizationError(Exception):
    """A request whose credentials can be read more than one way (RFC 6750 3.1, `invalid_request`:
    400): the reason is for the log and `error_description`."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who calls: a token's subject and scopes, or the anonymous caller of `MCP_HTTP_AUTH=none`
    (`unrestricted`), who holds every scope."""

    subject: str
    scopes: frozenset[str]
    unrestricted: bool = False

    def holds(self, scope: str) -> bool:
        return self.unrestricted or scope in self.scopes


ANONYMOUS: Final = Identity(subject="anonymous", scopes=frozenset(), unrestricted=True)


def required_scope(tool: str | None = None, *, resource_uri: str | None = None) -> str:
    """The scope a tool (by name) or a resource (by URI) needs."""
    if tool is not None:
        return _TOOL_SCOPES.get(tool, _UNGRANTABLE)
    scheme = urlsplit(resource_uri or "").scheme
    return _RESOURCE_SCHEMES.get(scheme, _UNGRANTABLE)


# One database of several (a configuration file's sources): `sql:read:<source>` grants the SQL tools
# and the schema resource for that source alone; `sql:read` grants every source.
SQL_SOURCE_PREFIX: Final = SQL_READ + ":"
DEFAULT_SOURCE: Final = "default"  # the one source of MCP_SQL_DSN (mcp_suite.sources)


def source_scope(source: str) -> str:
    """The scope that grants one source."""
    return SQL_SOURCE_PREFIX + source


def sql_sources(input_schemas: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The sources the SQL tools serve, read from their advertised arguments: the `source` enum of
    a configuration file's tools, else the one source `default`."""
    for schema in input_schemas:
        names = schema.get("properties", {}).get("source", {}).get("enum")
        if names:
            return tuple(str(name) for name in names)
    return (DEFAULT_SOURCE,)


def sources_allowed(identity: Identity, sources: Sequence[str]) -> tuple[str, ...]:
    """The sources `identity` may read: all with `sql:read`, else those it holds the scope of."""
    if identity.holds(SQL_READ):
        return tuple(sources)
    return tuple(source for source in sources if identity.holds(source_scope(source)))


def scope_lacking(
    identity: Identity,
    sources: Sequence[str],
    *,
    tool: str | None = None,
    arguments: Mapping[str, Any] | None = None,
    resource_uri: str | None = None,
) -> str | None:
    """The scope `identity` lacks for a tool call (its `arguments`) or a resource read, or None.

    A SQL tool or the schema resource needs `sql:read`, or the scope of the source it reads: a
    call's `source` argument (the one source when the tools take none), a resource's host. A caller
    holding no SQL scope at all lacks `sql:read`; one holding other sources' scopes, this one's."""
    needed = required_scope(tool, resource_uri=resource_uri)
    if identity.holds(needed):
        return None
    if not may_see(identity, needed):
        return needed  # no scope of the group at all: the group's own
    if tool is not None:
        source = str((arguments or {}).get("source", sources[0]))
    else:
        host = urlsplit(resource_uri or "").hostname or ""
        source = host if host in sources else DEFAULT_SOURCE
    scope = source_scope(source)
    return None if identity.holds(scope) else scope


def may_see(identity: Identity, needed: str) -> bool:
    """Whether a tool or resource needing `needed` is listed to `identity`: the SQL ones also to
    a holder of one source's scope (its arguments then list only that source)."""
    if identity.holds(needed):
        return True
    return needed == SQL_READ and any(scope.startswith(SQL_SOURCE_PREFIX) for scope in identity.scopes)


def scoped_input_schema(schema: Mapping[str, Any], allowed: Sequence[str]) -> dict[str, Any]:
    """A SQL tool's advertised arguments with `source`'s enum cut to the sources allowed."""
    properties = dict(schema.get("properties", {}))
    if "source" not in properties:
        return dict(schema)
    properties["source"] = {**properties["source"], "enum": list(allowed)}
    return {**schema, "properties": properties}


def scopes_served(tools: Iterable[str], resource_uris: Iterable[str] = ()) -> str:
    """The scopes the served tools and resources need, space-separated in `SCOPES` order: the
    `scope` of a 401's challenge (MCP authorization, "Scope Selection Strategy": the client asks
    for these when the server names them)."""
    needed = {required_scope(tool) for tool in tools} | {
        required_scope(resource_uri=u) for u in resource_uris
    }
    return " ".join(scope for scope in SCOPES if scope in needed)


def the_authorization(values: Sequence[str]) -> str | None:
    """The one `Authorization` header of a request (None: there is none). Two or more are a
    malformed request, whatever they hold: a proxy that reads the first and a server that reads the
    last would see two callers (RFC 9110 5.3: a field that is no list is sent once)."""
    if len(values) > 1:
        raise MalformedAuthorizationError("the request carries more than one Authorization header")
    return values[0] if values else None


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for no header or another form."""
    if authorization is None:
        return None
    match = _BEARER.fullmatch(authorization.strip())
    return match.group(1) if match else None


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TokenRejectedError(f"the {name} claim is not a number")
    return float(value)


def check_claims(
    claims: Mapping[str, Any], *, issuer: str, audience: str, now: float, leeway_s: float
) -> Identity:
    """The claims of a token whose signature was verified: `iss` is the issuer, `aud` names this
    resource (RFC 8707; a string or a list holding it), `exp` is required and not past, `nbf` not
    ahead, `iat` (when present) a number, not negative and not ahead (each with `leeway_s`), `sub`
    a non-empty string. Returns who calls, with their scopes (`scope`, space-separated, RFC 8693;
    or a `scp` list)."""
    if claims.get("iss") != issuer:
        raise TokenRejectedError("the token was not issued by the configured issuer")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if audience not in audiences:
        raise TokenRejectedError("the token's audience is not this resource")
    exp = _number(claims, "exp")
    if exp is None:
        raise TokenRejectedError("the token has no exp claim")
    if now > exp + leeway_s:
        raise TokenRejectedError("the token has expired")
    nbf = _number(claims, "nbf")
    if nbf is not None and now + leeway_s < nbf:
        raise TokenRejectedError("the token is not valid yet")
    # RFC 7519 4.1.6: when the token was issued. One issued ahead of this clock (beyond the skew)
    # or before 1970 was not issued by a working issuer: a forged or broken token, refused.
    iat = _number(claims, "iat")
    if iat is not None and (iat < 0 or now + leeway_s < iat):
        raise TokenRejectedError("the token's iat claim is not a time it can have been issued at")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise TokenRejectedError("the token has no sub claim")
    scope = claims.get("scope")
    scp = claims.get("scp")
    if isinstance(scope, str):
        scopes = frozenset(scope.split())
    elif isinstance(scp, list) and all(isinstance(item, str) for item in scp):
        scopes = frozenset(scp)
    else:
        scopes = frozenset()
    return Identity(subject=subject, scopes=scopes)


def _quoted(value: str) -> str:
    # RFC 9110 quoted-string: a backslash before `"` and `\`; control characters are dropped.
    cleaned = "".join(c for c in value if c >= " " and c != "\x7f")
    return '"' + cleaned.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(
    resource_metadata: str,
    *,
    error: str | None = None,
    scope: str | None = None,
    description: str | None = None,
) -> str:
    """A `WWW-Authenticate: Bearer` value (RFC 6750 3, RFC 9728 5.1)."""
    params = [f"resource_metadata={_quoted(resource_metadata)}"]
    if error is not None:
        params.append(f"error={_quoted(error)}")
    if scope is not None:
        params.append(f"scope={_quoted(scope)}")
    if description is not None:
        params.append(f"error_description={_quoted(description)}")
    return "Bearer " + ", ".join(params)


def metadata_paths(resource: str) -> tuple[str, ...]:
    """Where the metadata of `resource` is served: the path-suffixed well-known URI (RFC 9728 3.1,
    for a resource with a path), then the root one, as clients try them."""
    path = urlsplit(resource).path.rstrip("/")
    root = "/.well-known/oauth-protected-resource"
    return (root + path, root) if path else (root,)


def protected_resource_metadata(
    resource: str, authorization_servers: Collection[str], scopes: Collection[str] = SCOPES
) -> dict[str, Any]:
    """The Protected Resource Metadata document (RFC 9728 2)."""
    return {
        "resource": resource,
        "authorization_servers": list(authorization_servers),
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
    }
