"""Exit codes, the same for every command (docs/report-contract.md)."""

OK = 0  # verdict ok, or warn without --strict
FAIL = 1  # verdict fail, or warn with --strict
USAGE = 2  # bad option, unreadable or invalid input (matrix file, model path, directory)
CRASH = 3  # ortdoctor itself crashed: a bug

BUG_REPORT_URL = "https://github.com/ortdoctor/ortdoctor/issues"
