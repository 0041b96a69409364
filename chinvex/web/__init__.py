"""`chinvex ui`: a local web app over the same library the CLI and the MCP server use.

Reading a long Codex or Claude Code session, checking which lines an answer cites, or watching
an ingest is easier in a browser than in JSON. The web layer is thin on purpose: every page
calls the functions a CLI command calls (stats, doctor checks, the searcher, the answer
service, `conversations`, the ingest pipeline) and only turns their results into HTML, so the
UI can never disagree with `chinvex search` or `chinvex answer` about what the index says.

Modules: `server` binds and runs it, `app` assembles the Starlette application, `security`
guards every request (token, cookie, CSRF, origin, headers), `state` holds what lives for the
run (warm searcher, ingest jobs), `render` owns the templates, and `pages/` has one module per
page.
"""
