"""The files family: the directory-fd walk (`fdwalk`), its pure path policy (`policy`) and the two
tools that share the sandbox root (`sandbox_fs_read`, `sandbox_fs_list`). A tool imports the walk
and the policy, never a sibling tool.
"""

from typing import Final

# The OAuth scope of every tool of the family (docs/operations/remote.md).
SCOPE: Final = "files:read"
