"""Build hook: the wheel carries the example folder, so `mcp-suite demo` works without a clone.

`examples/safe_data` is copied to `mcp_suite/devdb/safe_data` in the wheel (a symlink in it becomes a
copy of its target: wheels hold no links). Everything else is declared in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithExamples(build_py):
    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "examples" / "safe_data"
        if source.is_dir() and not self.editable_mode:  # a checkout serves its own examples/
            shutil.copytree(
                source, Path(self.build_lib) / "mcp_suite" / "devdb" / "safe_data", dirs_exist_ok=True
            )


setup(cmdclass={"build_py": BuildPyWithExamples})
