"""The error of a config or option that cannot give a run."""


class TrainConfigError(ValueError):
    """The config or the options cannot give a run; the message says why.

    Attributes:
        exit_code (int): Status for a command-line tool: 2 for a wrong
            config or option, 1 when the run cannot start now (busy work
            dir, too few samples).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def __str__(self) -> str:
        return str(self.args[0])
