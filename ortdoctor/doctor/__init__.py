"""The use cases, each a library call: `check` (inspect -> decide -> prove -> diagnose -> report), `--model`, `fix`."""
