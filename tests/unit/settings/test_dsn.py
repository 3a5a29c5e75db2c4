"""A malformed MCP_SQL_DSN: exit 78 naming the variable and the fault, never a fragment of the DSN."""

from __future__ import annotations

import subprocess
import sys

import pytest
from psycopg.conninfo import conninfo_to_dict

from mcp_suite.dsn import dsn_problem
from mcp_suite.settings import SettingsError, load_settings

# Passwords with spaces, quotes, `=` and non-ASCII; each word is distinctive enough to search for.
PASSWORDS = ["Zebra Quokka", "it's=Wombat", 'dq"Narwhal=', "Kümmel Äpfel=ß", "back\\slash Lynx"]
SECRET_WORDS = ("Zebra", "Quokka", "Wombat", "Narwhal", "Kümmel", "Äpfel", "Lynx", "slash")


def _quoted(password: str) -> str:
    return "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_correctly_quoted_password_is_accepted_and_kept_exactly(password: str) -> None:
    dsn = f"host=127.0.0.1 user=reader password={_quoted(password)} dbname=docs"
    settings = load_settings({"MCP_SQL_DSN": dsn})
    assert settings.sql_dsn is not None
    assert conninfo_to_dict(settings.sql_dsn.get_secret_value())["password"] == password


MALFORMED = [
    ("host=127.0.0.1 user=reader password=Zebra Quokka", "word 4 is not a key=value pair"),
    ("host=127.0.0.1 password=Zebra Quokka=Wombat", "option 3 is not a libpq connection option"),
    ("host=127.0.0.1 password='Kümmel Äpfel", "quoted value of option 2 is not closed"),
    ("host=127.0.0.1 passwrd=Narwhal", "option 2 is not a libpq connection option (did you mean password?)"),
    ("postgresql://reader:Zebra%zzQuokka@127.0.0.1/docs", "does not start a percent-encoding"),
    ("postgresql://reader:Lynx@127.0.0.1/docs?sslmod=require", "(did you mean sslmode?)"),
    ("postgresql://reader:Wombat@[::1/docs", "host part is malformed"),
    ("host=127.0.0.1 password=Lynx sslmode=Zebra", "the value of sslmode is not one of disable, allow"),
    ("host=127.0.0.1 password=Lynx port=Quokka", "the value of port is not a port number"),
    ("postgresql://reader:Lynx@127.0.0.1/docs?connect_timeout=Wombat", "connect_timeout is not an integer"),
]


@pytest.mark.parametrize(("dsn", "says"), MALFORMED)
def test_a_malformed_dsn_is_refused_with_the_fault_and_no_fragment(dsn: str, says: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({"MCP_SQL_DSN": dsn})
    message = str(info.value)
    assert message.startswith("MCP_SQL_DSN: ")
    assert says in message
    assert not [word for word in (*SECRET_WORDS, "reader", "passwrd", "sslmod=") if word in message]


def test_dsn_problem_accepts_what_libpq_accepts() -> None:
    for dsn in (
        "host=h port=5432",
        "host = h",
        "postgresql://u:p@h/d?ssl=true",
        "host=h\\ x",
        "host=a,b port=5432,5433 sslmode=verify-full connect_timeout=5",
        "postgresql://u@h1:5432,h2:5433/d?target_session_attrs=read-write",
    ):
        assert dsn_problem(dsn) is None, dsn


@pytest.mark.parametrize("command", [[], ["check-role"]])
@pytest.mark.parametrize(("dsn", "says"), MALFORMED[:3])
def test_serve_and_check_role_exit_78_naming_the_variable(command: list[str], dsn: str, says: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_suite", *command],
        env={"MCP_SQL_DSN": dsn, "PATH": "/usr/bin:/bin"},
        input=b"",
        capture_output=True,
        timeout=30,
        check=False,
    )
    stderr = proc.stderr.decode()
    assert proc.returncode == 78, stderr
    assert "MCP_SQL_DSN" in stderr
    assert says in stderr
    assert "Traceback" not in stderr
    assert not [word for word in SECRET_WORDS if word in stderr]
    assert proc.stdout == b""


@pytest.mark.parametrize(
    ("dsn", "says"),
    [
        ("", "must not be empty"),
        ("  \t ", "must not be empty"),
        ("=Zebra host=h", "option 1 has no name before '='"),
        ("postgresql://h/d?sslmode", "URI parameter 1 is not a key=value pair"),
        ("postgresql://h/d?&&sslmode=require", "not a valid postgresql:// URI (libpq refused it"),
        ("host=h gssencmode=Quokka", "the value of gssencmode is not one of disable, prefer, require"),
        ("postgres://h/d?sslmode=Wombat", "the value of sslmode is not one of disable, allow"),
        ("postgresql://[::1]:Lynx/d", "the value of port is not a port number"),
    ],
)
def test_dsn_problem_names_each_remaining_fault_without_a_fragment(dsn: str, says: str) -> None:
    problem = dsn_problem(dsn)
    assert problem is not None
    assert says in problem
    assert not [word for word in SECRET_WORDS if word in problem]


def test_dsn_problem_accepts_an_empty_port_in_a_list_and_a_negative_integer() -> None:
    for dsn in ("host=a,b port=5432,", "host=h keepalives=-1"):
        assert dsn_problem(dsn) is None, dsn
