"""The page's application, for servers/measure.py to start under each server it times
(STORE, TOKEN and PORT come from the environment)."""

import os

from sparkprov.web.app import make_app

app = make_app(os.environ["STORE"], os.environ["TOKEN"], "127.0.0.1", int(os.environ["PORT"]))
