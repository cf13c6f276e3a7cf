"""`jobs-console demo`: the demo app (app.py), its application (jobs.py), the world it shows
(world.py) and the screenshot maker (screenshots.py). The console proper never imports it; only
console/cli.py starts it."""
