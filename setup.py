"""Build hook: the wheel carries the example folder and the role guide, so `mcp-suite demo` and
`mcp-suite role-guide` work without a clone.

`examples/safe_data` is copied to `mcp_suite/demo/safe_data` in the wheel (a symlink in it becomes a
copy of its target: wheels hold no links), and `docs/tools/postgres-role-guide.sql` beside the module
that reads it (`mcp_suite/tools/sql/engine/role_audit/guide.py`). Everything else is declared in
pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
GUIDE = Path("docs", "tools", "postgres-role-guide.sql")


class BuildPyWithExamples(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # a checkout serves its own examples/ and docs/
            return
        build = Path(self.build_lib) / "mcp_suite"
        source = ROOT / "examples" / "safe_data"
        if source.is_dir():
            shutil.copytree(source, build / "demo" / "safe_data", dirs_exist_ok=True)
        if (ROOT / GUIDE).is_file():
            shutil.copyfile(ROOT / GUIDE, build / "tools" / "sql" / "engine" / "role_audit" / GUIDE.name)


setup(cmdclass={"build_py": BuildPyWithExamples})
