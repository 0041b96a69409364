"""The local socket through which one-shot commands reach a chinvex process that is already
running for the user (`watch`, `ui`, `mcp`), whose search stack is warm.

`chinvex search`, `answer` and `pack` ask the running process for the result and format it
themselves, so their output is the same either way; with no process, a refused request or any
doubt (another chinvex version, other CHINVEX_* settings, a non-default generator), they run
in-process as before. The socket sits in a folder only the user can open.
"""
