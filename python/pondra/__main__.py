"""`python -m pondra`: the `pondra` binary, with the arguments given (the shell by default)."""

import os
import sys

from ._binary import binary


def main() -> None:
    path = binary()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
