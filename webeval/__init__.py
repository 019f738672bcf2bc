"""webeval: a pytest-native harness that evaluates visual web agents."""
