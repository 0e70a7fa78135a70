"""The command-line and process machinery under every tool: start-up (quiet logs, oneDNN
choice), CPU facts and execution rules, files (local or bucket, atomic writes),
option declarations, the command-line frame and its one-line errors."""
