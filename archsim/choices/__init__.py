"""The name sets commands offer as flag choices, and their defaults, each defined once here and imported
by the modules that compute with them. Every module of this package imports nothing, so building a
command's parser (``archsim COMMAND --help``) loads no numpy, pandas or numba (tests/test_help_imports.py).
:mod:`archsim.modes` (``--mode``) is the older module of the same kind."""
