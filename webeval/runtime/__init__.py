"""The runtime: a private display, a headed browser, visible input and the observation."""
