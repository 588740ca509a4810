"""Errors that mean bad input (reported as one line, exit code 2) rather than a bug.

Every such error subclasses :class:`UserError`; this module imports nothing, so any module may use it.
"""


class UserError(ValueError):
    """Base of the errors the CLI reports as one ``error: ...`` line and exit code 2."""


class InputError(UserError):
    """Bad user input: a file, a value or a combination of flags that cannot be used."""


class BackboneError(UserError):
    """A backbone (an adapter around a model) that breaks a rule of :mod:`mdm_mi.core.backbone`'s protocol:
    reported before it can give a silently wrong result."""


USER_ERRORS = (UserError, FileNotFoundError)
