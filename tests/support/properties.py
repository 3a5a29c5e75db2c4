"""Hypothesis settings for the security properties: five times the profile's examples.

The profile (tests/conftest.py) is loaded before any test module imports this, so
`settings.default` is the profile in force: in CI ("ci", derandomised) 200 examples, so 1,000 here.
"""

from __future__ import annotations

from hypothesis import settings

_PROFILE = settings.default
assert _PROFILE is not None  # tests/conftest.py loaded a profile before any test module imports this
SECURITY_EXAMPLES = 5 * _PROFILE.max_examples

security_property = settings(max_examples=SECURITY_EXAMPLES)
