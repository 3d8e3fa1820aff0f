import sys

from archsim.cli import command_line

sys.exit(command_line())
