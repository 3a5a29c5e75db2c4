"""Pure decisions of `sandbox_fs_read`: path splitting, echoing, UTF-8 cutting, the budget as sent
and the args model."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.problems import (
    ECHO_MAX_CHARS,
    AccessDeniedError,
    InvalidArgumentsError,
    NotFoundError,
    UnsupportedContentError,
)
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.protocol.mcp import model_json_schema
from mcp_suite.settings import Settings, load_settings
from mcp_suite.tools.files import policy as fs_policy
from mcp_suite.tools.files.models import (
    DEFAULT_MAX_BYTES,
    SandboxFsReadResult,
    args_model_for,
)
from mcp_suite.tools.files.policy import (
    Refusal,
    RefusedError,
    cut_to_whole_character,
    decode_text,
    display_path,
    fit_sent_bytes,
    sent_bytes,
    split_caller_path,
    split_directory_path,
)
from mcp_suite.tools.models import AdvertisedJsonSchema


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("a.txt", ("a.txt",)),
        ("a//b", ("a", "b")),
        ("./a/./b", ("a", "b")),
        ("a/../b", ("a", "..", "b")),
        ("..", ("..",)),
        ("%2e%2e/x", ("%2e%2e", "x")),
        ("sp ace/ü.txt", ("sp ace", "ü.txt")),
    ],
)
def test_split_keeps_names_and_parent_steps(raw: str, parts: tuple[str, ...]) -> None:
    assert split_caller_path(raw) == parts


@pytest.mark.parametrize(
    ("raw", "refusal"),
    [
        ("/etc/passwd", Refusal.ABSOLUTE),
        ("//x", Refusal.ABSOLUTE),
        ("/", Refusal.ABSOLUTE),
        ("a\x00b", Refusal.NUL_BYTE),
        ("/\x00", Refusal.NUL_BYTE),
        ("a\\b", Refusal.BACKSLASH),
        ("a\udcffb", Refusal.BAD_UNICODE),
        ("a/", Refusal.TRAILING_SLASH),
        ("./", Refusal.TRAILING_SLASH),
        (".", Refusal.ROOT_ITSELF),
        ("././/.", Refusal.ROOT_ITSELF),
    ],
)
def test_split_refuses(raw: str, refusal: Refusal) -> None:
    with pytest.raises(RefusedError) as info:
        split_caller_path(raw)
    assert info.value.refusal is refusal


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a//b/./c.txt", "a/b/c.txt"),
        ("sub/", "sub/"),
        ("../../etc/passwd", ""),
        ("a/../../etc/passwd", ""),
        ("/etc/passwd", ""),
        ("a\\..\\b", ""),
        ("a\x00", ""),
        ("a\udcff", ""),
    ],
)
def test_display_never_shows_what_could_be_a_host_path(raw: str, shown: str) -> None:
    assert display_path(raw) == shown


@given(st.text(max_size=600))
def test_display_is_never_absolute_and_never_climbs(raw: str) -> None:
    shown = display_path(raw)
    assert not shown.startswith("/")
    assert ".." not in shown.split("/")
    assert "\x00" not in shown


def test_problem_classes_follow_the_spec() -> None:
    assert Refusal.OUTSIDE_ROOT.problem("x").__class__ is AccessDeniedError
    assert Refusal.SYMLINK_LOOP.problem("x").__class__ is AccessDeniedError
    assert Refusal.NOT_REGULAR.problem("x").__class__ is AccessDeniedError
    assert Refusal.MISSING.problem("x").__class__ is NotFoundError
    assert Refusal.NOT_UTF8.problem("x").__class__ is UnsupportedContentError
    assert Refusal.BAD_UNICODE.problem("x").__class__ is InvalidArgumentsError


@pytest.mark.parametrize("refusal", list(Refusal))
def test_problem_echo_is_bounded(refusal: Refusal) -> None:
    problem = refusal.problem("p" * 5_000)
    assert "p" * (ECHO_MAX_CHARS + 1) not in problem.detail
    assert problem.invalid_params == ("relative_path",)


def test_outside_root_never_echoes_the_path() -> None:
    assert "secret" not in Refusal.OUTSIDE_ROOT.problem("secret/x").detail


@pytest.mark.parametrize(
    ("data", "kept"),
    [
        (b"", b""),
        (b"abc", b"abc"),
        ("a€".encode(), "a€".encode()),
        ("a€".encode()[:-1], b"a"),
        ("a€".encode()[:-2], b"a"),
        ("😀".encode()[:3], b""),
        ("é".encode()[:1], b""),
        (b"\x80\x80\x80\x80", b"\x80\x80\x80\x80"),  # garbage stays for the strict decoder
    ],
)
def test_cut_drops_only_an_incomplete_last_character(data: bytes, kept: bytes) -> None:
    assert cut_to_whole_character(data) == kept


@given(st.text(max_size=200), st.integers(min_value=0, max_value=900))
def test_cut_then_decode_is_a_prefix_of_the_text(text: str, limit: int) -> None:
    data = text.encode()
    cut = data[:limit]
    decoded = decode_text(cut, truncated=len(data) > limit)
    assert text.startswith(decoded)
    assert len(data[:limit]) - len(decoded.encode()) <= 3


@pytest.mark.parametrize("data", [b"caf\xe9", b"ab\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff", b"\x80"])
def test_non_utf8_is_unsupported_content(data: bytes) -> None:
    with pytest.raises(RefusedError) as info:
        decode_text(data, truncated=False)
    assert info.value.refusal is Refusal.NOT_UTF8


def test_args_model_bounds_max_bytes_by_settings() -> None:
    model = args_model_for(Settings(fs_max_bytes=100_000))
    assert model.model_validate({"relative_path": "a"}).max_bytes == DEFAULT_MAX_BYTES
    assert model.model_validate({"relative_path": "a", "max_bytes": 100_000}).max_bytes == 100_000
    for bad in (0, -1, 100_001, True, "5", 5.0):
        with pytest.raises(pydantic.ValidationError):
            model.model_validate({"relative_path": "a", "max_bytes": bad}, strict=True)


def test_default_max_bytes_follows_a_lower_setting() -> None:
    model = args_model_for(Settings(fs_max_bytes=1_000))
    assert model.model_validate({"relative_path": "a"}).max_bytes == 1_000


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"relative_path": ""},
        {"relative_path": "x" * 4_097},
        {"relative_path": "a/" * 2_500},  # the 5,000-character path
        {"relative_path": 5},
        {"relative_path": ["a"]},
        {"relative_path": "a", "extra": 1},
    ],
)
def test_args_model_refuses(arguments: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        args_model_for(Settings()).model_validate(arguments, strict=True)


def test_path_of_exactly_4096_characters_is_valid() -> None:
    args_model_for(Settings()).model_validate({"relative_path": "x" * 4_096}, strict=True)


def test_the_args_model_enforces_the_configured_maximum_which_the_advertised_schema_leaves_out() -> None:
    model = args_model_for(Settings(fs_max_bytes=12_345))
    assert model.model_validate({"relative_path": "a", "max_bytes": 12_345}, strict=True).max_bytes == 12_345
    with pytest.raises(pydantic.ValidationError, match="less than or equal to 12345"):
        model.model_validate({"relative_path": "a", "max_bytes": 12_346}, strict=True)
    # What a model is shown (issue 46): the default it gets, not the bounds (the refusal says them).
    schema = model_json_schema(model, AdvertisedJsonSchema)
    assert schema["properties"]["max_bytes"] == {"default": 12_345, "type": "integer"}
    assert schema["properties"]["relative_path"] == {
        "description": schema["properties"]["relative_path"]["description"],
        "type": "string",
    }
    assert schema["required"] == ["relative_path"]
    assert schema["additionalProperties"] is False
    assert "title" not in schema  # derived titles are left out (docs/tools/README.md)
    assert "description" not in schema  # the tool's description says what the arguments are for


def test_result_schema_describes_every_field() -> None:
    schema = model_json_schema(SandboxFsReadResult)
    assert set(schema["properties"]) == {"path", "size", "content", "truncated", "invisible"}
    assert all(prop["description"] for prop in schema["properties"].values())


def test_hard_links_are_refused_unless_the_environment_allows_them(tmp_path: Path) -> None:
    assert Settings().fs_allow_hard_links is False
    env = {"MCP_SAFE_DATA_DIR": str(tmp_path), "MCP_FS_ALLOW_HARD_LINKS": "true"}
    assert load_settings(env).fs_allow_hard_links is True


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("", ()),
        (".", ()),
        ("./", ()),
        ("././/", ()),
        ("sub/", ("sub",)),
        ("a//b/./c/", ("a", "b", "c")),
        ("a/../b", ("a", "..", "b")),
    ],
)
def test_split_directory_allows_a_trailing_slash_and_the_root(raw: str, parts: tuple[str, ...]) -> None:
    assert split_directory_path(raw) == parts


@pytest.mark.parametrize(
    ("raw", "refusal"),
    [
        ("/", Refusal.ABSOLUTE),
        ("/etc/", Refusal.ABSOLUTE),
        ("a\x00/", Refusal.NUL_BYTE),
        ("a\\b/", Refusal.BACKSLASH),
        ("a\ud800/", Refusal.BAD_UNICODE),
    ],
)
def test_split_directory_refuses_the_same_spellings(raw: str, refusal: Refusal) -> None:
    with pytest.raises(RefusedError) as info:
        split_directory_path(raw)
    assert info.value.refusal is refusal


@pytest.mark.parametrize("refusal", list(Refusal))
def test_a_refused_error_is_named_after_its_refusal(refusal: Refusal) -> None:
    error = RefusedError(refusal)
    assert error.refusal is refusal
    assert str(error) == refusal.name  # what a log line or a traceback shows


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("XX/x.txt", "XX/x.txt"),  # letters next to the refused characters are not refused
        ("a" + chr(0xD800), ""),  # the first and last lone surrogates
        ("a" + chr(0xDFFF), ""),
        ("a" + chr(0xD7FF), "a" + chr(0xD7FF)),  # the characters around them are valid Unicode
        ("a" + chr(0xE000), "a" + chr(0xE000)),
    ],
)
def test_display_refuses_exactly_the_unsafe_characters(raw: str, shown: str) -> None:
    assert display_path(raw) == shown


@pytest.mark.parametrize(
    ("data", "kept"),
    [
        ("aé".encode(), "aé".encode()),  # complete sequences of each length stay
        ("a€".encode(), "a€".encode()),
        ("a😀".encode(), "a😀".encode()),
        ("😀".encode(), "😀".encode()),
        ("a😀".encode()[:-1], b"a"),
        ("a😀".encode()[:-3], b"a"),
        (b"a\x7f", b"a\x7f"),
        (b"ab\xff", b"ab\xff"),  # an invalid lead byte is not a cut character: the decoder refuses it
        (b"ab\xf8", b"ab\xf8"),
        (b"ab\xf8\x80", b"ab\xf8\x80"),
    ],
)
def test_cut_keeps_whole_sequences_and_invalid_bytes(data: bytes, kept: bytes) -> None:
    assert cut_to_whole_character(data) == kept


@pytest.mark.parametrize(
    ("char", "sent"),
    [
        ("a", 1),
        ('"', 2),
        ("\\", 2),
        ("\n", 2),
        ("\t", 2),
        ("\x00", 6),
        ("\x7f", 6),
        ("\x80", 6),
        ("é", 6),
        ("€", 6),
        ("\uffff", 6),
        ("\U00010000", 12),
        ("😀", 12),
    ],
)
def test_a_character_counts_what_the_wire_carries_of_it(char: str, sent: int) -> None:
    assert sent_bytes(char) == sent
    assert fit_sent_bytes(char * 3, 3 * sent) == (char * 3, False)
    assert fit_sent_bytes(char * 3, 3 * sent - 1) == (char * 2, True)


def test_a_cut_far_into_a_long_text_lands_on_the_last_character_that_fits() -> None:
    # Past many chunks of the C encoder, then character by character inside the one that overflows.
    text = "a" * 50_000 + "😀" * 10 + "b" * 10
    assert fit_sent_bytes(text, 50_000 + 12 * 3 + 11) == ("a" * 50_000 + "😀" * 3, True)
    assert fit_sent_bytes(text, 50_000 + 12 * 10 + 10) == (text, False)


def test_a_cut_after_a_character_beyond_the_basic_plane_counts_it_twelve_bytes() -> None:
    # The character-by-character walk, not the chunk's count: the text overflows its budget.
    assert fit_sent_bytes("😀aaa", 14) == ("😀aa", True)


def test_plain_ascii_text_and_its_two_byte_escapes_are_counted_without_the_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Most files: the count is two byte-deletions; the JSON encoder runs only for other control
    # characters and non-ASCII text.
    def encoder_not_expected(value: object) -> str:
        raise AssertionError(f"the encoder was asked to write {value!r}")

    monkeypatch.setattr(fs_policy, "compact_json", encoder_not_expected)
    assert sent_bytes("plain text") == 10
    assert sent_bytes('a "quote", a \\ and\r\n\tline ends') == 30 + 6
    with pytest.raises(AssertionError, match="encoder was asked"):
        sent_bytes("a bell \x07")


@given(st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=127))))
def test_the_count_as_sent_is_the_length_of_what_the_wire_writes(text: str) -> None:
    assert sent_bytes(text) == len(compact_json(text)) - 2


@given(st.text(), st.integers(min_value=0, max_value=200))
def test_the_fitted_prefix_is_the_longest_that_fits_its_budget(text: str, budget: int) -> None:
    fitted, cut = fit_sent_bytes(text, budget)
    assert text.startswith(fitted)
    assert sent_bytes(fitted) <= budget
    assert cut is (fitted != text)
    if cut:
        assert sent_bytes(text[: len(fitted) + 1]) > budget
