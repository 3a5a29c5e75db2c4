"""The pieces of `python -m bench tokens`: the tokenizer is o200k exactly, what is counted is the
three fields a model is shown, and the figures say where the list stands against issue 46's
targets and the peers."""

from __future__ import annotations

import gzip
import hashlib
import warnings
from importlib import resources

from bench.bench_tokens import (
    BEFORE,
    PEERS,
    TARGET_TOKENS,
    Measure,
    figures,
    model_visible,
    peer_figures,
    visible_json,
)
from bench.tokens import count_tokens

# The sha256 tiktoken pins for the o200k_base ranks it downloads (tiktoken_ext/openai_public.py).
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def test_the_ranks_counted_with_are_o200k_base_as_tiktoken_pins_them() -> None:
    count_tokens("")  # loads the package (and its deprecation warning) the way the bench does
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        packed = resources.files("bpe_openai.data").joinpath("o200k_base.tiktoken.gz").read_bytes()
    assert hashlib.sha256(gzip.decompress(packed)).hexdigest() == O200K_BASE_SHA256


def test_text_is_counted_in_o200k_tokens() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2  # o200k: 24912, 2375
    assert count_tokens("<|endoftext|>") > 1  # a special token's marker is only text here


def test_a_model_is_shown_each_tool_s_name_description_and_input_schema_only() -> None:
    tool = {
        "name": "t",
        "title": "T",
        "description": "Does – things.",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    }
    (visible,) = model_visible([tool])
    assert visible == {"name": "t", "description": "Does – things.", "inputSchema": {"type": "object"}}
    # Compact, and characters outside ASCII as themselves (as a client writes the decoded list).
    assert (
        visible_json(visible) == '{"name":"t","description":"Does – things.","inputSchema":{"type":"object"}}'
    )


def test_the_whole_list_is_held_to_issue_46s_target_and_shown_beside_the_figure_before() -> None:
    found = Measure({"a": (100, 30), "b": (200, 60)}, 303, 91)
    lines = figures("SQL tools only", found)
    assert [line.name for line in lines] == [
        "SQL tools only: a",
        "SQL tools only: b",
        "SQL tools only: the whole list (2 tools)",
    ]
    assert [line.value for line in lines] == [30, 60, 91]
    assert lines[0].note == "100 bytes"
    total = lines[-1]
    assert (total.ok, total.target) == (True, f"<= {TARGET_TOKENS['SQL tools only']}")
    assert f"{BEFORE['SQL tools only']:,} tokens before issue 46" in total.note
    over = figures("SQL tools only", Measure({}, 0, TARGET_TOKENS["SQL tools only"] + 1))
    assert over[-1].ok is False


def test_the_peers_figures_are_labelled_as_the_issue_s_measurements() -> None:
    lines = peer_figures()
    assert [line.value for line in lines] == [tokens for _, _, tokens in PEERS]
    assert all("issue 46, measured" in line.note for line in lines)
