"""Settings from the environment (docs/configuration.md): defaults, strict parsing, exit 78 when invalid."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_suite.settings import (
    ENV_VARIABLES,
    MAX_FRAME_BYTES,
    SecretStr,
    Settings,
    SettingsError,
    foreign_variables,
    load_settings,
)
from tests.support.tooling_variables import TOOLING_NAMES


def test_defaults_match_the_spec() -> None:
    settings = load_settings({})
    assert settings.sql_dsn is None
    assert settings.safe_data_dir is None
    assert settings.metrics_enabled is True
    assert settings.sql_statement_timeout_ms == 5_000
    assert settings.sql_max_rows == 200
    assert settings.sql_max_result_bytes == 20_000
    assert settings.fs_list_max_bytes == 20_000
    assert settings.fs_max_bytes == 1_048_576
    assert settings.max_concurrency == 16
    assert settings.queue_wait_s == 5
    assert settings.call_deadline_s == 30
    assert settings.drain_grace_s == 5
    assert settings.max_queued_calls == 64
    assert MAX_FRAME_BYTES == 1_048_576


def test_values_are_parsed(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "MCP_SQL_DSN": "postgresql://u:secret@127.0.0.1/db",
            "MCP_SAFE_DATA_DIR": str(tmp_path),
            "MCP_METRICS_ENABLED": "false",
            "MCP_MAX_CONCURRENCY": "4",
            "MCP_QUEUE_WAIT_S": "0.5",
            "MCP_LOG_LEVEL": "debug",
        }
    )
    assert settings.sql_dsn is not None
    assert settings.sql_dsn.get_secret_value().endswith("/db")
    assert "secret" not in repr(settings)
    assert settings.safe_data_dir == tmp_path
    assert settings.metrics_enabled is False
    assert settings.max_concurrency == 4
    assert settings.queue_wait_s == 0.5
    assert settings.log_level == "DEBUG"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MCP_MAX_CONCURRENCY", "0"),
        ("MCP_MAX_CONCURRENCY", "many"),
        ("MCP_MAX_CONCURRENCY", "1.5"),
        ("MCP_SQL_MAX_ROWS", "-1"),
        ("MCP_METRICS_ENABLED", "maybe"),
        ("MCP_QUEUE_WAIT_S", "nan"),
        ("MCP_CALL_DEADLINE_S", "inf"),
        ("MCP_LOG_LEVEL", "loud"),
        ("MCP_SAFE_DATA_DIR", "/nonexistent/dir/for/tests"),
        ("MCP_SQL_STATEMENT_TIMEOUT_MS", "30000"),  # not below the 30 s deadline
        ("MCP_SQL_POOL_MIN_SIZE", "9"),  # above the default max of 4
        ("MCP_SQL_POOL_MAX_IDLE_S", "0.5"),  # below 1 s the pool would wake up all the time
        ("MCP_SQL_POOL_MAX_IDLE_S", "86401"),
    ],
)
def test_invalid_values_are_refused_and_named(name: str, value: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({name: value})
    assert name in str(info.value)


def test_the_dsn_is_never_echoed() -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({"MCP_SQL_DSN": "postgresql://u:hunter2@h/db", "MCP_SQL_POOL_MIN_SIZE": "x"})
    assert "hunter2" not in str(info.value)


def test_the_audit_dsn_is_a_secret_like_the_dsn() -> None:
    settings = load_settings({"MCP_SQL_AUDIT_DSN": "postgresql://u:hunter2@db-direct/db"})
    assert settings.sql_audit_dsn is not None
    assert settings.sql_audit_dsn.get_secret_value().endswith("@db-direct/db")
    assert "hunter2" not in repr(settings)
    with pytest.raises(SettingsError) as info:
        load_settings({"MCP_SQL_AUDIT_DSN": "postgresql://u:hunter2@h/db?no_such_keyword=1"})
    assert "MCP_SQL_AUDIT_DSN" in str(info.value)
    assert "hunter2" not in str(info.value)
    with pytest.raises(SettingsError, match="MCP_SQL_AUDIT_DSN"):
        Settings(sql_audit_dsn="postgresql://u:hunter2@h/db")  # type: ignore[arg-type]  # only as a SecretStr


def test_every_variable_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    missing = [name for name in ENV_VARIABLES if name not in doc]
    assert missing == []  # the tooling's own names: test_settings_variables.py


def _start_refused(env: dict[str, str]) -> bytes:
    """Start the server with `env` alone; it must exit 78 with nothing on stdout. Returns stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_suite"],
        env={**env, "PATH": "/usr/bin:/bin"},
        input=b"",
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 78
    assert proc.stdout == b""
    (line,) = proc.stderr.splitlines()  # one JSON object, like every other stderr line
    assert json.loads(line)["exit_status"] == 78
    return proc.stderr


def test_invalid_configuration_exits_78_with_a_message() -> None:
    assert b"MCP_MAX_CONCURRENCY" in _start_refused({"MCP_MAX_CONCURRENCY": "zero"})


def test_help_and_version() -> None:
    for flag, needle in (("--help", b"MCP_SQL_DSN"), ("--version", b"mcp-suite 0.1.0")):
        proc = subprocess.run(
            [sys.executable, "-m", "mcp_suite", flag], capture_output=True, timeout=30, check=False
        )
        assert proc.returncode == 0
        assert needle in proc.stdout


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"max_concurrency": 0}, "MCP_MAX_CONCURRENCY"),
        ({"max_concurrency": True}, "MCP_MAX_CONCURRENCY"),  # a bool is not an int
        ({"max_concurrency": 4.0}, "MCP_MAX_CONCURRENCY"),  # nor is a float
        ({"max_concurrency": "4"}, "MCP_MAX_CONCURRENCY"),  # nor a string
        ({"queue_wait_s": float("nan")}, "MCP_QUEUE_WAIT_S"),
        ({"call_deadline_s": 0}, "MCP_CALL_DEADLINE_S"),  # must be above 0
        ({"sql_max_rows": 10_001}, "MCP_SQL_MAX_ROWS"),
        ({"log_level": "LOUD"}, "MCP_LOG_LEVEL"),
        ({"cpu_affinity": "all"}, "MCP_CPU_AFFINITY"),
        ({"sql_dsn": "postgresql://u:hunter2@h/db"}, "MCP_SQL_DSN"),  # only as a SecretStr
        ({"metrics_enabled": "yes"}, "MCP_METRICS_ENABLED"),
        ({"safe_data_dir": "/tmp"}, "MCP_SAFE_DATA_DIR"),  # a Path, not a str
        ({"inbound_channel_size": 0}, "inbound_channel_size"),  # not a variable: named by its field
        ({"sql_pool_min_size": 5}, "MCP_SQL_POOL_MIN_SIZE"),  # above the default max of 4
        ({"http_max_connections_per_peer": 513}, "MCP_HTTP_MAX_CONNECTIONS_PER_PEER"),  # above the total
        ({"http_max_unread_bytes_per_identity": 16_777_217}, "MCP_HTTP_MAX_UNREAD_BYTES_PER_IDENTITY"),
        ({"http_write_timeout_s": 0}, "MCP_HTTP_WRITE_TIMEOUT_S"),
        ({"sql_accept_definer_functions": ("nodot",)}, "MCP_SQL_ACCEPT_DEFINER_FUNCTIONS"),  # as parsed
        ({"sql_allow_extensions": ("a b",)}, "MCP_SQL_ALLOW_EXTENSIONS"),
        ({"sql_accept_function_creators": ("'x'",)}, "MCP_SQL_ACCEPT_FUNCTION_CREATORS"),
        ({"sql_allow_extensions": (3,)}, "MCP_SQL_ALLOW_EXTENSIONS"),  # names are strings
    ],
)
def test_direct_construction_is_validated_as_strictly(values: dict[str, object], named: str) -> None:
    with pytest.raises(SettingsError) as info:
        Settings(**values)  # type: ignore[arg-type]  # wrong types on purpose
    assert named in str(info.value)
    assert "hunter2" not in str(info.value)


def test_direct_construction_keeps_valid_values_and_floats_stay_floats() -> None:
    settings = Settings(queue_wait_s=0, call_deadline_s=30, sql_dsn=SecretStr("postgresql://u:pw@h/db"))
    assert settings.queue_wait_s == 0.0
    assert isinstance(settings.call_deadline_s, float)
    assert settings.sql_dsn is not None
    assert settings.sql_dsn.get_secret_value() == "postgresql://u:pw@h/db"
    assert "pw@" not in repr(settings)
    assert "pw@" not in str(settings.sql_dsn)
    with pytest.raises(AttributeError):
        settings.max_concurrency = 1  # type: ignore[misc]  # frozen


def test_an_unknown_mcp_variable_is_refused_with_the_nearest_known_name() -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({"MCP_SQL_MAX_ROW": "10", "MCP_LOGLEVEL": "DEBUG", "MCP_SQL_ZZZZZZ": "1"})
    message = str(info.value)
    assert "MCP_SQL_MAX_ROW: not a known setting (did you mean MCP_SQL_MAX_ROWS?)" in message
    assert "MCP_LOGLEVEL: not a known setting (did you mean MCP_LOG_LEVEL?)" in message
    assert "MCP_SQL_ZZZZZZ: not a known setting (did you mean MCP_SQL_DSN?)" in message  # its family
    assert "10" not in message  # names, never values
    assert "DEBUG" not in message


def test_the_tooling_variables_and_other_prefixes_are_not_settings_but_are_accepted() -> None:
    env = {name: "x" for name in TOOLING_NAMES} | {"MCPX": "1", "XMCP_SQL_MAX_ROW": "1"}
    assert load_settings(env) == load_settings({})


def test_a_misspelt_variable_exits_78_instead_of_keeping_the_default() -> None:
    assert b"did you mean MCP_SQL_MAX_ROWS?" in _start_refused({"MCP_SQL_MAX_ROW": "10"})


NAMES_RULE = "expected schema.function names, separated by commas"


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("MCP_QUEUE_WAIT_S", "soon", "expected a number"),
        ("MCP_SAFE_DATA_DIR", "bad\x00path", "expected a path"),
        ("MCP_SQL_ACCEPT_DEFINER_FUNCTIONS", "public.f, nodot", NAMES_RULE),
        ("MCP_SQL_ACCEPT_DEFINER_FUNCTIONS", "a.b.c", NAMES_RULE),
        ("MCP_SQL_ACCEPT_DEFINER_FUNCTIONS", "public.f()", NAMES_RULE),
        ("MCP_CPU_AFFINITY", "all", "expected single or off"),
        ("MCP_FS_ALLOW_HARD_LINKS", "perhaps", "expected true or false"),
    ],
)
def test_each_parser_names_its_rule(name: str, value: str, says: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({name: value})
    assert str(info.value) == f"{name}: {says}"


def test_a_relative_folder_is_refused_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client starts the server in a working directory of its own choosing.
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    for name in ("MCP_SAFE_DATA_DIR", "MCP_METRICS_DISK_PATH"):
        with pytest.raises(SettingsError) as info:
            load_settings({name: "data"})
        assert str(info.value) == f"{name}: must be an absolute path"


def test_every_configuration_error_is_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(
            {
                "MCP_SQL_MAX_ROW": "10",  # unknown
                "MCP_LOG_LEVEL": "loud",  # a value no parser takes
                "MCP_SQL_POOL_MAX_SIZE": "0",  # out of range
                "MCP_SAFE_DATA_DIR": "relative",
            }
        )
    message = str(info.value)
    assert "MCP_SQL_MAX_ROW: not a known setting" in message
    assert "MCP_LOG_LEVEL:" in message
    assert "MCP_SQL_POOL_MAX_SIZE" in message
    assert "MCP_SAFE_DATA_DIR: must be an absolute path" in message


def test_another_programs_mcp_variable_is_ignored_and_named_but_a_likely_typo_is_refused() -> None:
    theirs = {"MCP_TIMEOUT": "3", "MCP_TOOL_TIMEOUT": "1", "MCP_SUITE_CHECKOUT": "/x", "MCP_FROBNICATE": "1"}
    assert load_settings(theirs) == load_settings({})
    assert foreign_variables(theirs | {"MCP_LOG_LEVEL": "INFO"}) == sorted(theirs)
    # In a family of ours, or within two edits of a known name: a typo, refused.
    for typo in ("MCP_SQL_ANYTHING", "MCP_FS_MAXBYTES", "MCP_SAFE_DIR", "MCP_METRICS_X", "MCP_LOG_LEVL"):
        with pytest.raises(SettingsError):
            load_settings({typo: "1"})
        assert foreign_variables({typo: "1"}) == []


def test_parsers_accept_every_documented_spelling(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    settings = load_settings(
        {
            "MCP_SAFE_DATA_DIR": str(tmp_path / "data"),
            "MCP_METRICS_ENABLED": "Off",
            "MCP_FS_ALLOW_HARD_LINKS": "Yes",
            "MCP_LOG_LEVEL": "warn",
            "MCP_CPU_AFFINITY": " OFF ",
            "MCP_SQL_ACCEPT_DEFINER_FUNCTIONS": " public.f ,, audit.g ",
        }
    )
    assert settings.safe_data_dir == tmp_path / "data"
    assert settings.metrics_enabled is False
    assert settings.fs_allow_hard_links is True
    assert settings.log_level == "WARNING"
    assert settings.cpu_affinity == "off"
    assert settings.sql_accept_definer_functions == ("public.f", "audit.g")


def test_secret_strings_compare_and_hash_by_value_without_showing_it() -> None:
    a, b, c = SecretStr("pw-one"), SecretStr("pw-one"), SecretStr("pw-two")
    assert a == b
    assert a != c
    assert a != "pw-one"
    assert {a, b, c} == {a, c}
    assert "pw-one" not in repr(a) + str(a)


def test_the_pool_idle_time_is_a_setting_and_an_idle_pool_keeps_no_connection_by_default() -> None:
    settings = load_settings({"MCP_SQL_POOL_MAX_IDLE_S": "30", "MCP_SQL_POOL_MAX_SIZE": "2"})
    assert settings.sql_pool_max_idle_s == 30.0
    assert settings.sql_pool_min_size == 0
    assert load_settings({}).sql_pool_max_idle_s == 600.0


# -- HTTP (serve-http) -------------------------------------------------------------------------------


def test_http_defaults_listen_on_loopback_and_require_a_token() -> None:
    settings = load_settings({})
    assert (settings.http_host, settings.http_port, settings.http_path) == ("127.0.0.1", 8000, "/mcp")
    assert settings.http_auth == "jwt"
    assert settings.http_problems() == [
        "MCP_HTTP_RESOURCE_URI is required with MCP_HTTP_AUTH=jwt",
        "MCP_HTTP_ISSUER is required with MCP_HTTP_AUTH=jwt",
        "MCP_HTTP_JWKS_URL is required with MCP_HTTP_AUTH=jwt",
    ]


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_no_authorization_is_allowed_on_loopback(host: str) -> None:
    settings = load_settings({"MCP_HTTP_AUTH": "none", "MCP_HTTP_HOST": host})
    assert settings.http_problems() == []


def test_the_new_http_limits_have_their_defaults() -> None:
    settings = load_settings({})
    assert settings.http_max_calls_per_identity == 8
    assert settings.http_max_sessions_per_subject == 8
    assert settings.http_jwks_wait_s == 2.0
    assert load_settings({"MCP_HTTP_JWKS_WAIT_S": "0.5"}).http_jwks_wait_s == 0.5


@pytest.mark.parametrize(
    ("concurrency", "share", "refused"),
    [
        ("16", "8", False),
        ("16", "15", False),
        ("16", "16", True),
        ("4", "8", True),
        ("1", "1", False),
        ("2", "1", False),
        ("2", "2", True),
    ],
)
def test_a_caller_s_share_of_the_call_slots_is_below_the_server_s(
    concurrency: str, share: str, refused: bool
) -> None:
    env = {
        "MCP_HTTP_AUTH": "none",
        "MCP_MAX_CONCURRENCY": concurrency,
        "MCP_HTTP_MAX_CALLS_PER_IDENTITY": share,
    }
    problem = "MCP_HTTP_MAX_CALLS_PER_IDENTITY must be below MCP_MAX_CONCURRENCY (or 1 when that is 1)"
    assert load_settings(env).http_problems() == ([problem] if refused else [])


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "mcp.example.com"])
def test_no_authorization_is_refused_off_loopback(host: str) -> None:
    with pytest.raises(SettingsError, match="MCP_HTTP_AUTH=none is allowed only on a loopback"):
        load_settings({"MCP_HTTP_AUTH": "none", "MCP_HTTP_HOST": host})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MCP_HTTP_PATH", "mcp"),
        ("MCP_HTTP_PATH", "/mcp/"),
        ("MCP_HTTP_PATH", "/"),
        ("MCP_HTTP_PATH", "/mcp?x=1"),
        ("MCP_HTTP_HOST", "[::1]"),
        ("MCP_HTTP_HOST", "a b"),
        ("MCP_HTTP_ALLOWED_ORIGINS", "evil"),
        ("MCP_HTTP_ALLOWED_ORIGINS", "https://app.example/path"),
        ("MCP_HTTP_RESOURCE_URI", "mcp.example.com"),
        ("MCP_HTTP_RESOURCE_URI", "https://mcp.example.com#fragment"),
        ("MCP_HTTP_ISSUER", "ftp://idp.example"),
        ("MCP_HTTP_AUTH", "basic"),
        ("MCP_HTTP_PORT", "65536"),
        ("MCP_HTTP_MAX_BODY_BYTES", "100"),
        ("MCP_HTTP_IDLE_TIMEOUT_S", "0"),
        ("MCP_HTTP_CLOCK_LEEWAY_S", "301"),
        ("MCP_HTTP_TOKEN_CACHE_SIZE", "-1"),
        ("MCP_HTTP_TOKEN_CACHE_SIZE", "65537"),
        ("MCP_HTTP_MAX_CALLS_PER_IDENTITY", "0"),
        ("MCP_HTTP_MAX_CALLS_PER_IDENTITY", "257"),
        ("MCP_HTTP_MAX_SESSIONS_PER_SUBJECT", "0"),
        ("MCP_HTTP_JWKS_WAIT_S", "0"),
        ("MCP_HTTP_JWKS_WAIT_S", "61"),
    ],
)
def test_a_bad_http_setting_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings({name: value})


def test_http_origins_are_a_list() -> None:
    settings = load_settings({"MCP_HTTP_ALLOWED_ORIGINS": "https://a.example, HTTP://B.example:8080"})
    assert settings.http_allowed_origins == ("https://a.example", "http://b.example:8080")


def test_serve_http_without_its_issuer_exits_78(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_suite.cli import main

    assert main(["serve-http"]) == 78
    record = json.loads(capsys.readouterr().err)
    assert "MCP_HTTP_ISSUER is required" in record["msg"]
    assert record["exit_status"] == 78


# -- traces and metrics ----------------------------------------------------------------------------


def test_traces_and_metrics_are_off_by_default_and_their_listener_is_loopback() -> None:
    settings = load_settings({})
    assert (settings.otel_endpoint, settings.prometheus_port) == (None, None)
    assert settings.prometheus_host == "127.0.0.1"
    assert settings.telemetry_configured is False
    assert load_settings({"MCP_PROMETHEUS_PORT": "0"}).telemetry_configured is True
    on = load_settings({"MCP_OTEL_ENDPOINT": "http://127.0.0.1:4318", "MCP_OTEL_QUEUE_SIZE": "64"})
    assert (on.otel_endpoint, on.otel_queue_size, on.telemetry_configured) == (
        "http://127.0.0.1:4318",
        64,
        True,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MCP_OTEL_ENDPOINT", "collector:4318"),
        ("MCP_OTEL_ENDPOINT", "grpc://collector:4317"),
        ("MCP_OTEL_QUEUE_SIZE", "8"),
        ("MCP_OTEL_EXPORT_INTERVAL_S", "0"),
        ("MCP_OTEL_EXPORT_TIMEOUT_S", "0"),
        ("MCP_OTEL_SERVICE_NAME", "a\nb"),
        ("MCP_PROMETHEUS_PORT", "65536"),
        ("MCP_PROMETHEUS_PORT", "-1"),
        ("MCP_PROMETHEUS_HOST", "[::1]"),
        ("MCP_OTEL_ENDPIONT", "http://127.0.0.1:4318"),  # a misspelling of ours is refused
    ],
)
def test_a_bad_telemetry_setting_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings({name: value})


def test_the_wire_limits_are_the_package_s_constants_and_not_also_fields_of_settings() -> None:
    import mcp_suite.settings as settings_package
    from mcp_suite.settings import limits

    fields = {spec.name for spec in dataclasses.fields(Settings)}
    names = [name for name in vars(limits) if name.isupper()]
    assert {"MAX_FRAME_BYTES", "MAX_JSON_DEPTH", "ARG_MAX_DEPTH", "ARG_MAX_ITEMS"} <= set(names)
    for name in names:
        assert name.lower() not in fields  # one copy: the constant
        assert getattr(settings_package, name) is getattr(limits, name)


def test_every_rule_across_settings_is_reported_at_once_each_named_by_its_variable() -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({"MCP_SQL_POOL_MIN_SIZE": "5", "MCP_HTTP_MAX_CONNECTIONS_PER_PEER": "600"})
    assert str(info.value) == (
        "MCP_SQL_POOL_MIN_SIZE must not exceed MCP_SQL_POOL_MAX_SIZE; "
        "MCP_HTTP_MAX_CONNECTIONS_PER_PEER must not exceed MCP_HTTP_MAX_CONNECTIONS"
    )


def test_a_problem_of_the_model_names_its_fields_in_whichever_channel_renders_it() -> None:
    with pytest.raises(SettingsError) as info:
        Settings(sql_pool_min_size=5, sql_max_rows=0)
    (problem,) = info.value.problems  # a value's own problem first; the rules across fields after
    assert str(info.value) == "MCP_SQL_MAX_ROWS: must be at least 1 and at most 10000"
    assert problem.render(lambda name: f"<{name}>") == "<sql_max_rows>: must be at least 1 and at most 10000"
    with pytest.raises(SettingsError) as info:
        Settings(sql_pool_min_size=5)
    (problem,) = info.value.problems
    assert problem.render(str.upper) == "SQL_POOL_MIN_SIZE must not exceed SQL_POOL_MAX_SIZE"
