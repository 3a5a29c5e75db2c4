"""The least-privilege role guide, the SQL `mcp-suite role-guide` prints (docs/tools/read_only_sql.md).

One file, `docs/tools/postgres-role-guide.sql`: a checkout reads it there; the wheel carries a copy
beside this module (setup.py copies it), so an install without a clone has the guide the audit
points to. Pure file reading; no database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["GUIDE_NAME", "role_guide"]

GUIDE_NAME: Final = "postgres-role-guide.sql"
_HERE: Final = Path(__file__).resolve().parent
# The wheel's copy first, then the checkout's docs/tools/ (five levels up from this package).
_PLACES: Final = (_HERE / GUIDE_NAME, _HERE.parents[4] / "docs" / "tools" / GUIDE_NAME)


def role_guide() -> str:
    """The guide's SQL. Raises FileNotFoundError when neither the wheel's copy nor the checkout's is there."""
    for path in _PLACES:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"{GUIDE_NAME} is not installed beside {__name__}")
