"""The agent: the loop, its budgets and the trajectory it leaves."""
