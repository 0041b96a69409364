"""One module per page of `chinvex ui`; each exposes `routes()` for `chinvex.web.app`."""
