"""`charge-spark explore`: a local web server over a rule set's solved table.

`answers` reads the table as `query` does, `coach` plays a seat against the
solver, `board_svg` and `figures` draw, `pages` renders the HTML, `app` routes
requests and `serve` starts it all from the command line.
"""
