"""One module per subcommand; each defines a click command named ``command``."""
