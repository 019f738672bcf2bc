"""Reports people review: Allure results completed to the fixed denominator, replays, and the HTML report.

Nothing here imports pytest or a browser: the plugin writes results while tests run, `webeval report` builds the
report later from the run directory alone.
"""
