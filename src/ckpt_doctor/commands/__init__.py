"""One module per verb: register(subparsers) adds its flags and sets `func`."""
