"""Authorization decisions of the HTTP transport, without I/O (MCP authorization, as a resource
server): the bearer credential in a header, the claims of a token whose signature is verified,
the scope each tool or resource needs (read from what each declares, passed in as plain data: no
tool or family is named here), the `WWW-Authenticate` challenges and the Protected
Resource Metadata document (RFC 9728).

`runtime.http_auth` verifies signatures and fetches the issuer's keys; this module decides.
Must not import trio or do I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

__all__ = [
    "ANONYMOUS",
    "UNGRANTABLE",
    "Grant",
    "Grants",
    "Identity",
    "MalformedAuthorizationError",
    "TokenRejectedError",
    "bearer_token",
    "challenge",
    "check_claims",
    "grants_of",
    "metadata_paths",
    "protected_resource_metadata",
    "scoped_input_schema",
    "source_scope",
    "the_authorization",
]

# Deny by default: a tool or resource the server does not serve needs a scope no token can hold
# (a real scope name, since a challenge names it).
UNGRANTABLE: Final = "mcp-suite:unmapped"

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
    # Every verified claim of the token (the identity map reads `groups`, `roles` and those it
    # passes on); not part of who the caller is for equality.
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def holds(self, scope: str) -> bool:
        return self.unrestricted or scope in self.scopes


ANONYMOUS: Final = Identity(subject="anonymous", scopes=frozenset(), unrestricted=True)


def source_scope(scope: str, source: str) -> str:
    """The scope that grants what `scope` grants, for one data source alone (`sql:read:product`)."""
    return f"{scope}:{source}"


@dataclass(frozen=True, slots=True)
class Grant:
    """What a tool or a resource needs: `scope` (the one its spec declares), or, for one of its data
    `sources` at a time, `<scope>:<source>` (a tool's `source` argument, a resource's source)."""

    scope: str
    sources: tuple[str, ...] = ()

    def may_see(self, identity: Identity) -> bool:
        """Whether it is listed to `identity`: to a holder of its scope, and when it has sources to
        a holder of one source's scope of that family (its `source` then lists only those)."""
        if identity.holds(self.scope):
            return True
        prefix = source_scope(self.scope, "")
        return bool(self.sources) and any(scope.startswith(prefix) for scope in identity.scopes)

    def sources_allowed(self, identity: Identity) -> tuple[str, ...]:
        """The sources `identity` may read: all with the scope, else those it holds the scope of."""
        if identity.holds(self.scope):
            return self.sources
        return tuple(s for s in self.sources if identity.holds(source_scope(self.scope, s)))

    def lacking(self, identity: Identity, arguments: Mapping[str, Any] | None = None) -> str | None:
        """The scope `identity` lacks for a call with `arguments` (a resource read: None), or None.

        A caller holding no scope of the family at all lacks the family's own; one holding other
        sources' scopes, the scope of the source read: the call's `source` argument, else the
        first source (the one source of a tool that takes none, or a resource's)."""
        if identity.holds(self.scope):
            return None
        if not self.may_see(identity):
            return self.scope
        source = (arguments or {}).get("source", self.sources[0])
        if source not in self.sources:
            # Not a source served: no scope of one grants it, and the caller's value is not
            # repeated into a scope (nor a header); the family's scope is what it lacks.
            return self.scope
        scope = source_scope(self.scope, source)
        return None if identity.holds(scope) else scope


_UNGRANTED: Final = Grant(UNGRANTABLE)


@dataclass(frozen=True, slots=True)
class Grants:
    """The grant of every tool (by name) and resource (by URI) served, in the registry's order."""

    tools: Mapping[str, Grant]
    resources: Mapping[str, Grant]

    def tool(self, name: str) -> Grant:
        return self.tools.get(name, _UNGRANTED)

    def resource(self, uri: str) -> Grant:
        return self.resources.get(uri, _UNGRANTED)

    def scopes(self) -> tuple[str, ...]:
        """The scopes of what is served, each once, in the order served: the `scope` of a 401's
        challenge (MCP authorization, "Scope Selection Strategy": the client asks for these) and
        the metadata's `scopes_supported`."""
        served = (grant.scope for grant in (*self.tools.values(), *self.resources.values()))
        return tuple(dict.fromkeys(served))

    def scopes_supported(self) -> tuple[str, ...]:
        """Every scope that grants something, each once: those of `scopes`, then each source's
        (`sql:read:<source>`), in the order served: the metadata's `scopes_supported`, so an
        operator or a client learns the per-source scopes it may ask for."""
        grants = (*self.tools.values(), *self.resources.values())
        per_source = (source_scope(grant.scope, source) for grant in grants for source in grant.sources)
        return tuple(dict.fromkeys((*self.scopes(), *per_source)))


def _source_enum(schema: Mapping[str, Any]) -> tuple[str, ...]:
    names = schema.get("properties", {}).get("source", {}).get("enum")
    return tuple(str(name) for name in names) if names else ()


def grants_of(
    tools: Iterable[tuple[str, str, Mapping[str, Any]]], resources: Iterable[tuple[str, str, str | None]]
) -> Grants:
    """The grants of the tools served (name, declared scope, advertised arguments) and the resources
    (URI, declared scope, the source it describes or None).

    A tool whose arguments carry a `source` enum is granted per source by `<scope>:<source>`; one
    without, whose family's resources describe sources, for the first of them (the one source of
    MCP_SQL_DSN, `default`); a resource with a source, for that one."""
    resource_list = list(resources)
    family: dict[str, list[str]] = {}
    for _uri, scope, source in resource_list:
        if source is not None:
            family.setdefault(scope, []).append(source)
    return Grants(
        tools={
            name: Grant(scope, _source_enum(schema) or tuple(family.get(scope, ())))
            for name, scope, schema in tools
        },
        resources={
            uri: Grant(scope, () if source is None else (source,)) for uri, scope, source in resource_list
        },
    )


def scoped_input_schema(schema: Mapping[str, Any], allowed: Sequence[str]) -> dict[str, Any]:
    """A tool's advertised arguments with `source`'s enum cut to the sources allowed."""
    properties = dict(schema.get("properties", {}))
    if "source" not in properties:
        return dict(schema)
    properties["source"] = {**properties["source"], "enum": list(allowed)}
    return {**schema, "properties": properties}


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
    # NaN compares false with everything (an `exp` of NaN never expires), and an infinite time or
    # an integer past a float's range is no time a working issuer writes: not a number either.
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise TokenRejectedError(f"the {name} claim is not a finite number")
    return number


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
    return Identity(subject=subject, scopes=scopes, claims=dict(claims))


def _quoted(value: str) -> str:
    # RFC 9110 quoted-string: a backslash before `"` and `\`; control characters are dropped, and
    # anything past ASCII is a `?` (a header value is bytes, and only ASCII reads the same to all).
    cleaned = "".join(c if c < "\x7f" else "?" for c in value if " " <= c != "\x7f")
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
    resource: str, authorization_servers: Collection[str], scopes: Collection[str]
) -> dict[str, Any]:
    """The Protected Resource Metadata document (RFC 9728 2)."""
    return {
        "resource": resource,
        "authorization_servers": list(authorization_servers),
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
    }
