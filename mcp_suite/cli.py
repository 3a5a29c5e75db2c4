"""Command line: argv and environment → settings → `trio.run(serve)`.

    mcp-suite [serve]      serve MCP on stdio (the default)
    mcp-suite serve-http   serve MCP over Streamable HTTP (docs/operations/remote.md)
    mcp-suite try-http     serve-http on loopback with an issuer of its own; prints a token
    mcp-suite check-role   run the PostgreSQL role audit alone and print the findings
    mcp-suite role-guide   print the least-privilege role guide (SQL) the audit points to
    mcp-suite --version | --help

Exit status: see `EXIT_STATUSES` (printed by `--help`, documented in docs/configuration.md).
Only parsing and dispatch live here: what `check-role` and `role-guide` print is the SQL family's
(`tools/sql/check_role.py`; a contract keeps the engine and psycopg out of this module).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import argparse

import trio

from mcp_suite import SERVER_NAME, __version__
from mcp_suite.runtime.affinity import pin_to_current_cpu
from mcp_suite.runtime.log_sink import configure_logging, logger, shutdown_logging, write_line_now
from mcp_suite.runtime.recorder import NO_TELEMETRY, Watcher
from mcp_suite.runtime.session import Session, serve_session
from mcp_suite.runtime.stdio import ProtocolFds, open_fd_streams, take_over_stdio
from mcp_suite.settings import ENV_VARIABLES, Settings, SettingsError, foreign_variables, load_settings
from mcp_suite.tools.base import StartupRefusedError, StartupUnavailableError
from mcp_suite.tools.registry import Registry, ToolOpener, open_registry

__all__ = ["EXIT_STATUSES", "main"]

# How long the exit waits for a warm-up thread still at work (Session.join_warm_up).
WARM_UP_JOIN_S: Final = 0.5
EXIT_STATUSES: Final = (
    (os.EX_OK, "a clean shutdown (EOF, SIGINT or SIGTERM, then the drain); check-role: the role only reads"),
    (
        os.EX_UNAVAILABLE,
        "the database cannot be reached or refuses the login: at start-up with "
        "MCP_SQL_REQUIRE_DATABASE=true, or for check-role; demo: the demo database cannot be started; "
        "serve-http: the address cannot be listened on",
    ),
    (os.EX_SOFTWARE, "an unexpected failure (details on stderr only)"),
    (
        os.EX_CONFIG,
        "an invalid configuration (a bad or unknown MCP_* variable, a malformed MCP_SQL_DSN), "
        "or a database role that can do more than read",
    ),
)


def _parser() -> argparse.ArgumentParser:
    import argparse  # only when there are arguments to parse
    import textwrap

    description = (
        "A hardened, read-only Model Context Protocol server on stdio: one read-only SQL query "
        "at a time against PostgreSQL, text files below a sandboxed folder, and aggregate host "
        "metrics. Configured through environment variables, and the databases through a TOML file "
        "(--config or MCP_CONFIG): " + ", ".join(ENV_VARIABLES)
    )
    statuses = [
        textwrap.fill(meaning, 78, initial_indent=f"  {code:<4}", subsequent_indent=" " * 6)
        for code, meaning in EXIT_STATUSES
    ]
    parser = argparse.ArgumentParser(
        prog="mcp-suite",
        description=textwrap.fill(description, 78),
        epilog="exit status:\n" + "\n".join(statuses),
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the exit status table
    )
    parser.add_argument("--version", action="version", version=f"{SERVER_NAME} {__version__}")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the TOML file naming the databases (docs/configuration.md); the same as MCP_CONFIG",
    )
    parser.add_argument(
        "command",
        nargs="?",
        default="serve",
        choices=("serve", "serve-http", "try-http", "check-role", "role-guide", "demo"),
        help=(
            "serve (default): MCP on stdio; serve-http: MCP over Streamable HTTP (MCP_HTTP_*); "
            "try-http: serve-http on loopback with a key made for this run, printing a token on stdout; "
            "check-role: audit the MCP_SQL_DSN role and exit; "
            "role-guide: print the SQL of a least-privilege role on stdout; "
            "demo: MCP on stdio with a throwaway PostgreSQL and the example folder (the [demo] extra)"
        ),
    )
    parser.add_argument(
        "demo_action",
        nargs="?",
        choices=("serve", "destroy"),
        metavar="{serve,destroy}",
        help="after demo: serve (default), or destroy the demo database in the user's cache directory",
    )
    return parser


def _refuse(message: str, status: int) -> int:
    """A refusal to start, as one JSON line on stderr like every other; returns `status`."""
    write_line_now("critical", message, exit_status=status)
    return status


def main(argv: Sequence[str] | None = None, *, extra_tools: Iterable[ToolOpener] = ()) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `mcp-suite` with no argument is how clients start it: skip argparse (and its import) then.
    command, demo_action = "serve", None
    if argv:
        parser = _parser()
        args = parser.parse_args(argv)
        command, demo_action = args.command, args.demo_action
        if args.config is not None:  # the flag and the variable are one setting
            os.environ["MCP_CONFIG"] = os.path.abspath(args.config)
        if demo_action is not None and command != "demo":
            parser.error(f"{demo_action!r} follows only demo")
    if command == "role-guide":  # needs no setting: it prints a file the package carries
        from mcp_suite.tools.sql.check_role import print_role_guide

        return print_role_guide(refuse=_refuse)
    try:
        settings = load_settings()
    except SettingsError as exc:
        return _refuse(f"invalid configuration: {exc}", os.EX_CONFIG)
    if command == "check-role":  # the SQL family's face of the role audit, loaded when asked
        from mcp_suite.tools.sql.check_role import check_roles

        return check_roles(settings, refuse=_refuse)
    if command == "demo":
        from mcp_suite.demo.__main__ import main as demo_main  # a development aid, loaded when asked

        if demo_action == "destroy":
            return demo_main(["destroy"])
        return demo_main(["serve", "--", sys.executable, "-m", "mcp_suite"])
    if command in ("serve-http", "try-http"):
        return _serve_http(settings, list(extra_tools), trial=command == "try-http")
    return _serve(settings, list(extra_tools))


def _serve_http(settings: Settings, extra_tools: list[ToolOpener], *, trial: bool = False) -> int:
    """`mcp-suite serve-http`: the tools over Streamable HTTP until SIGINT/SIGTERM. `trial`
    (`try-http`): on loopback only, with an issuer made for this run, its token on stdout."""
    from mcp_suite.runtime.http_auth import fetch_jwks  # joserfc: only for HTTP
    from mcp_suite.trial import Trial, open_trial

    made: Trial | None = None
    if trial:
        try:
            made = open_trial(settings)
        except SettingsError as exc:
            return _refuse(f"invalid configuration: {exc}", os.EX_CONFIG)
        settings = made.settings
    problems = settings.http_problems()
    if problems:
        return _refuse(f"invalid configuration: {'; '.join(problems)}", os.EX_CONFIG)
    from mcp_suite.runtime.http import serve_http  # hypercorn: only for HTTP

    fetch = made.fetch if made is not None else fetch_jwks

    configure_logging(settings.log_level, buffer_bytes=settings.log_buffer_bytes)
    for name in foreign_variables():
        logger.warning("%s is not a setting of mcp-suite (another program's?): ignored", name)

    def serve() -> None:
        require_telemetry_extra(settings)  # before any database is opened and audited
        with (
            open_registry(settings, extra=extra_tools) as registry,
            open_telemetry(settings, registry) as telemetry,
        ):
            # No handshake to keep fast here: every tool's models and schemas are built first.
            for step in registry.warm_up:
                step()
            gc.freeze()
            if made is not None:  # every tool and resource served: the token may use them all
                scopes = [t.scope for t in registry.tools.values()]
                _announce_trial(
                    settings, made.mint([*scopes, *(r.scope for r in registry.resources.values())])
                )
            _run_unwrapped(
                functools.partial(serve_http, settings, registry, fetch=fetch, telemetry=telemetry)
            )

    return _exit_status(serve, listening=(settings.http_host, settings.http_port))


def _announce_trial(settings: Settings, token: str) -> None:
    """The trial's token alone on stdout (`TOKEN=$(mcp-suite try-http)` takes it), and on stderr how
    to use it."""
    url = settings.http_resource_uri
    logger.warning(
        "try-http: a trial on this machine only: the token on stdout may call every tool at %s for 8 "
        "hours (subject %r; this run's key signs it, so it is void when the server stops). Try: "
        "MCP_TOKEN=<the token> python examples/sdk_client.py http %s",
        url,
        "trial",
        url,
    )
    sys.stdout.write(token + "\n")
    sys.stdout.flush()


def _run_unwrapped(serve: Callable[[], Awaitable[object]]) -> None:
    """`trio.run(serve)`, with a failure that is alone in its exception group (a nursery wraps what
    a child raises: hypercorn's bind fails in one) raised as itself, so that the start-up's refusals
    catch it by class and say it in one line."""
    try:
        trio.run(serve)
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1 and isinstance(leaves[0], Exception):
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


def _serve(settings: Settings, extra_tools: list[ToolOpener]) -> int:
    fds = take_over_stdio()
    # Before any thread exists (the log writer, worker threads, the pool's), so all inherit it.
    cpu = pin_to_current_cpu() if settings.cpu_affinity == "single" else None
    configure_logging(settings.log_level, buffer_bytes=settings.log_buffer_bytes)
    for name in foreign_variables():  # the MCP_ prefix is shared with other programs
        logger.warning("%s is not a setting of mcp-suite (another program's?): ignored", name)
    if cpu is not None:
        logger.debug("pinned to CPU %d", cpu)

    def serve() -> None:
        require_telemetry_extra(settings)  # before any database is opened and audited
        with (
            open_registry(settings, extra=extra_tools, stdio=True) as registry,
            open_telemetry(settings, registry) as telemetry,
        ):
            logger.info(
                "serving %s %s on stdio with tools: %s",
                SERVER_NAME,
                __version__,
                ", ".join(registry.tools) or "(none)",
            )
            if os.isatty(fds.stdin):  # someone typed the command: say what it waits for
                logger.info(
                    "stdin is a terminal: the server waits there for JSON-RPC messages, one per "
                    "line (an MCP client starts it as its child and writes them); Ctrl-D ends it"
                )
            # Everything loaded so far lives as long as the process: move it out of the
            # collector's view, so a collection during a session scans only the session's own
            # objects.
            gc.freeze()
            session = trio.run(_serve_stdio, settings, registry, fds, telemetry)
            # Before the tools close and the interpreter exits: see Session.join_warm_up.
            if not session.join_warm_up(WARM_UP_JOIN_S):
                logger.debug("the warm-up was still at work at exit")

    return _exit_status(serve)


def _exit_status(serve: Callable[[], None], *, listening: tuple[str, int] | None = None) -> int:
    """Run `serve` (a transport, from start-up to shut-down) and say how it ended as an exit
    status: EX_OK, EX_CONFIG for a refused start (settings, the role), EX_UNAVAILABLE for a start
    that could not be made (the database; with `listening`, the HTTP address and port, an `OSError`:
    the address is taken or not ours to bind), EX_SOFTWARE for anything else. Logging is shut down
    before it returns."""
    try:
        try:
            serve()
        except (StartupRefusedError, SettingsError) as exc:
            shutdown_logging()
            return _refuse(f"refusing to start: {exc}", os.EX_CONFIG)
        except StartupUnavailableError as exc:
            shutdown_logging()
            return _refuse(f"refusing to start: {exc}", os.EX_UNAVAILABLE)
        except Exception as exc:  # noqa: BLE001  # last resort: log it on stderr, exit EX_SOFTWARE
            if listening is not None and isinstance(exc, OSError):
                logger.critical("cannot listen on %s:%d: %s", *listening, exc.strerror)
                return os.EX_UNAVAILABLE
            logger.critical("the server failed", exc_info=True)
            return os.EX_SOFTWARE
        logger.info("shut down cleanly")
        return os.EX_OK
    finally:
        shutdown_logging()
        logging.shutdown()


def require_telemetry_extra(settings: Settings) -> None:
    """Raises `SettingsError` when traces or metrics are configured but the `otel` extra is not
    installed: said at once, before the start-up opens any database."""
    if not settings.telemetry_configured:
        return
    try:
        import mcp_suite.runtime.telemetry  # noqa: F401  # loaded here, used by open_telemetry
    except ImportError:
        raise SettingsError(
            "MCP_OTEL_ENDPOINT or MCP_PROMETHEUS_PORT is set, but OpenTelemetry is not installed "
            "(install mcp-suite[otel])"
        ) from None


@contextlib.contextmanager
def open_telemetry(settings: Settings, registry: Registry) -> Iterator[Watcher]:
    """Traces and metrics when configured (MCP_OTEL_ENDPOINT, MCP_PROMETHEUS_PORT), else the null
    telemetry and no import of OpenTelemetry; flushed and stopped when the block ends.

    Raises `SettingsError` when they are configured but the `otel` extra is not installed.
    """
    if not settings.telemetry_configured:
        yield NO_TELEMETRY
        return
    require_telemetry_extra(settings)
    from mcp_suite.runtime.telemetry import open_telemetry as open_otel

    try:
        telemetry = open_otel(settings, registry)
    except OSError as exc:  # the Prometheus address is taken, or not ours to bind
        raise SettingsError(
            f"MCP_PROMETHEUS_PORT: cannot listen on {settings.prometheus_host}:{settings.prometheus_port}: "
            f"{exc.strerror}"
        ) from None
    try:
        yield telemetry
    finally:
        telemetry.close()


async def _serve_stdio(
    settings: Settings, registry: Registry, fds: ProtocolFds, telemetry: Watcher = NO_TELEMETRY
) -> Session:
    stdin, stdout = open_fd_streams(fds)
    async with stdin, stdout:
        return await serve_session(
            stdin, stdout, settings=settings, registry=registry, handle_signals=True, telemetry=telemetry
        )
