"""The imperative shell: the only package that runs the trio event loop and touches stdio."""
