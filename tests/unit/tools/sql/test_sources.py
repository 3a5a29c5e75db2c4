"""The configuration file's sources, read without a database: each source's settings, its password
from a file or a variable, and every error the file can hold, each named (file, source, key), never
with a value."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_suite.settings import SecretStr, Settings, SettingsError
from mcp_suite.tools.sql.sources import DEFAULT_SOURCE, load_sources

GOOD = """
[[sources]]
name = "warehouse"
description = "Sales warehouse"
dsn = "host=db1 dbname=sales user=mcp_reader"
password_file = "{secret}"
max_rows = 500
statement_timeout_ms = 2000
allow_extensions = ["ltree"]

[[sources]]
name = "product"
description = "Product database"
dsn = "postgresql://mcp_reader@db2/app"
password_env = "PRODUCT_PW"
pooler = "transaction"
"""


A = "[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a'\n"  # a valid source


def _file(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "sources.toml"
    path.write_text(text)
    return Settings(config_file=path)


def _problem(settings: Settings, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(SettingsError) as caught:
        load_sources(settings, environ or {})
    return str(caught.value)


def test_without_a_file_the_dsn_is_the_one_source_default() -> None:
    assert load_sources(Settings(), {}) == ()
    settings = Settings(sql_dsn=SecretStr("dbname=x"))
    (source,) = load_sources(settings, {})
    assert (source.name, source.settings, source.dsn) == (DEFAULT_SOURCE, settings, settings.sql_dsn)


def test_a_file_gives_each_source_its_settings_and_its_password(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret word\n")
    secret.chmod(0o600)
    settings = _file(tmp_path, GOOD.format(secret=secret))
    warehouse, product = load_sources(settings, {"PRODUCT_PW": "other'pw"})
    assert (warehouse.name, warehouse.description) == ("warehouse", "Sales warehouse")
    assert warehouse.settings.sql_max_rows == 500
    assert warehouse.settings.sql_statement_timeout_ms == 2000
    assert warehouse.settings.sql_allow_extensions == ("ltree",)
    assert warehouse.settings.sql_pooler == "none"
    assert product.settings.sql_pooler == "transaction"
    assert product.settings.sql_max_rows == settings.sql_max_rows
    assert "password='s3cret word'" in warehouse.dsn.get_secret_value()
    assert "other\\'pw" in product.dsn.get_secret_value()
    assert "s3cret" not in repr(warehouse)


def test_the_file_beside_mcp_sql_dsn_or_a_per_source_variable_is_refused(tmp_path: Path) -> None:
    settings = _file(tmp_path, GOOD)
    both = Settings(config_file=settings.config_file, sql_dsn=SecretStr("dbname=x"))
    assert "MCP_SQL_DSN may not be set beside it" in _problem(both)
    assert "MCP_SQL_MAX_ROWS" in _problem(settings, {"MCP_SQL_MAX_ROWS": "10"})
    audit = Settings(config_file=settings.config_file, sql_audit_dsn=SecretStr("dbname=x"))
    assert "MCP_SQL_AUDIT_DSN may not be set beside it" in _problem(audit)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[sources]\n", "not valid TOML"),
        ("", "no [[sources]] table"),
        ("title = 'x'\n[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a'\n", "title: unknown key"),
        (
            A + "max_rowz=3\n",
            "max_rowz: unknown key (did you mean max_rows?)",
        ),
        ("[[sources]]\ndescription='d'\ndsn='dbname=a'\n", "name: required"),
        ("[[sources]]\nname='Big Name'\ndescription='d'\ndsn='dbname=a'\n", "name: required, lower-case"),
        ("[[sources]]\nname='a'\ndsn='dbname=a'\n", "description: required"),
        (
            "[[sources]]\nname='a'\ndescription='" + "d" * 201 + "'\ndsn='dbname=a'\n",
            "at most 200 characters",
        ),
        ("[[sources]]\nname='a'\ndescription='d'\n", "dsn: required"),
        ("[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a bogus=1'\n", "dsn: "),
        ("[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a password=x'\n", "holds a password"),
        (
            A + "password_file='/x'\npassword_env='Y'\n",
            "one or the other",
        ),
        (
            A + "password_file='/nonexistent/pw'\n",
            "cannot be read",
        ),
        (A + "password_env='UNSET_PW'\n", "password_env: the environment variable UNSET_PW is not set"),
        (A + "password_env=3\n", "password_env: the name of an environment variable"),
        (
            A + "allow_extensions='ltree'\n",
            "a list of strings",
        ),
        (A + "max_rows=0\n", "source 1 (a): max_rows"),
        (A + "max_rows='many'\n", "(a): max_rows: expected an integer"),
        (
            A + "[[sources]]\nname='a'\ndescription='e'\ndsn='dbname=b'\n",
            "another source has the name 'a'",
        ),
    ],
)
def test_each_error_of_the_file_is_named(tmp_path: Path, text: str, expected: str) -> None:
    problem = _problem(_file(tmp_path, text))
    assert expected in problem
    assert str(tmp_path) in problem


def test_every_problem_of_the_file_is_reported_at_once_and_no_value(tmp_path: Path) -> None:
    text = (
        "[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a password=hunter2'\n"
        "[[sources]]\nname='b'\ndsn='dbname=b'\nmax_rows=-1\n"
    )
    problem = _problem(_file(tmp_path, text))
    assert "source 1 (a): dsn: holds a password" in problem
    assert "source 2 (b): description: required" in problem
    assert "hunter2" not in problem


def test_a_source_s_settings_are_checked_even_when_its_connection_string_is_wrong(tmp_path: Path) -> None:
    text = "[[sources]]\nname='a'\ndescription='d'\nmax_rows=0\npool_min_size=5\n"
    where = f"{tmp_path}/sources.toml: source 1 (a)"
    assert _problem(_file(tmp_path, text)).split("; ") == [
        f"{where}: dsn: required, a libpq connection string without its password",
        f"{where}: max_rows: must be at least 1 and at most 10000",
    ]


def test_a_setting_of_a_source_is_named_by_its_key_and_one_it_cannot_set_by_its_variable(
    tmp_path: Path,
) -> None:
    where = f"{tmp_path}/sources.toml: source 1 (a)"
    assert _problem(_file(tmp_path, A + "pool_min_size=5\n")) == (
        f"{where}: pool_min_size must not exceed pool_max_size"
    )
    assert _problem(_file(tmp_path, A + "statement_timeout_ms=30000\n")) == (
        f"{where}: statement_timeout_ms must be below the call deadline (MCP_CALL_DEADLINE_S)"
    )
    assert _problem(_file(tmp_path, A + "pooler='pgbouncer'\n")) == (
        f"{where}: pooler: expected one of none, transaction"
    )


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            "accept_definer_functions = ['public.f()']",
            "accept_definer_functions: expected schema.function names",
        ),
        ("accept_definer_functions = ['nodot']", "accept_definer_functions: expected schema.function names"),
        ("accept_definer_functions = ['']", "accept_definer_functions: expected schema.function names"),
        (
            "accept_function_creators = ['\"Admin\"']",
            "accept_function_creators: expected role names as PostgreSQL stores them (no quotes)",
        ),
        ("accept_function_creators = ['']", "accept_function_creators: expected role names"),
        (
            "allow_extensions = ['pg trgm']",
            "allow_extensions: expected extension names as pg_extension holds them",
        ),
    ],
)
def test_a_list_of_names_in_the_file_follows_the_rule_its_variable_follows(
    tmp_path: Path, line: str, says: str
) -> None:
    problem = _problem(_file(tmp_path, A + line + "\n"))
    assert problem.startswith(f"{tmp_path}/sources.toml: source 1 (a): {says}")
    assert "separated by commas" not in problem  # the variable's wording, not the file's
    assert "pg trgm" not in problem  # names, never values
    assert "Admin" not in problem


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    assert "cannot be read" in _problem(Settings(config_file=tmp_path / "missing.toml"))


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o644])
def test_a_password_file_its_group_or_others_can_reach_is_refused_as_libpq_refuses_such_a_pgpass(
    tmp_path: Path, mode: int
) -> None:
    secret = tmp_path / "pw"
    secret.write_text("hunter2\n")
    secret.chmod(mode)
    problem = _problem(_file(tmp_path, A + f"password_file='{secret}'\n"))
    assert f"source 1 (a): password_file: its group or others have access (mode {mode:04o})" in problem
    assert "chmod 600" in problem
    assert "hunter2" not in problem


def test_a_password_file_its_owner_alone_can_read_is_accepted(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("hunter2\n")
    secret.chmod(0o400)
    (source,) = load_sources(_file(tmp_path, A + f"password_file='{secret}'\n"), {})
    assert "password=hunter2" in source.dsn.get_secret_value()


def test_a_password_file_that_is_not_text_is_named(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_bytes(b"\xff\xfe")
    secret.chmod(0o600)
    assert "source 1 (a): password_file: cannot be read" in _problem(
        _file(tmp_path, A + f"password_file='{secret}'\n")
    )


def _identity_file(tmp_path: Path, key_file: Path) -> Settings:
    return _file(
        tmp_path,
        A + f"[sources.identity]\ndefault_role='r'\npersonal_subject=true\nsubject_key_file='{key_file}'\n",
    )


def test_the_subject_key_file_keys_the_hash_of_personal_subjects(tmp_path: Path) -> None:
    key = tmp_path / "subject-key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef\n")
    key.chmod(0o600)
    (source,) = load_sources(_identity_file(tmp_path, key), {})
    assert source.identity is not None
    assert source.identity.subject_key == b"0123456789abcdef0123456789abcdef\n"
    assert "0123456789abcdef" not in repr(source)  # the key is never shown


@pytest.mark.parametrize(
    ("content", "mode", "expected"),
    [
        (b"short", 0o600, "identity: subject_key_file: at least 32 bytes"),
        (b"k" * 32, 0o644, "identity: subject_key_file: its group or others have access (mode 0644)"),
    ],
)
def test_a_subject_key_file_too_short_or_readable_by_others_is_refused(
    tmp_path: Path, content: bytes, mode: int, expected: str
) -> None:
    key = tmp_path / "subject-key"
    key.write_bytes(content)
    key.chmod(mode)
    problem = _problem(_identity_file(tmp_path, key))
    assert f"source 1 (a): {expected}" in problem
    assert "k" * 32 not in problem


def test_a_missing_subject_key_file_is_named(tmp_path: Path) -> None:
    assert "identity: subject_key_file: cannot be read" in _problem(
        _identity_file(tmp_path, tmp_path / "nope")
    )
