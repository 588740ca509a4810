"""Errors that mean bad input (reported as one line, exit code 2) rather than a bug."""

from mdm_mi.checkpoint import CheckpointError
from mdm_mi.config import ConfigError
from mdm_mi.sudoku.grid import PuzzleFormatError


class InputError(ValueError):
    """Bad user input: a file, a value or a combination of flags that cannot be used."""


USER_ERRORS = (InputError, CheckpointError, ConfigError, PuzzleFormatError, FileNotFoundError)
