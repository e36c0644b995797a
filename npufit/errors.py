"""Errors are values with a reason until the CLI edge turns them into one line + exit code."""


class NpufitError(Exception):
    """A user-facing error: one clear sentence, no traceback. exit_code 2 = bad input."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class BadModelError(NpufitError):
    """The model file is missing, unreadable, corrupt or unsafe."""


class UnsupportedModelError(NpufitError):
    """The model is valid, but this toolchain cannot take it (an op it has no lowering/kernel for).

    A finding about the model x target, not a tool failure: pipelines record it as `rejected`.
    """


class NpufitWarning(UserWarning):
    """Something a user must know before trusting a result (an artifact calibrated on random data): the library
    warns with it, in its own terms; the CLI prints it as one line on stderr when it happens."""


class TimeLimitReached(KeyboardInterrupt):
    """A verb ran past its time limit (--time-limit). A KeyboardInterrupt, so that it unwinds like Ctrl-C: no
    `except Exception` swallows it, temp files and tool processes are cleaned up on the way out."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
