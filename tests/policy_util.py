"""Helpers shared by the policy tests."""

from __future__ import annotations


def run_steps(pol, env, n: int) -> None:
    """Up to n ask/tell rounds of ``pol`` on ``env`` (fewer if the policy stops)."""
    for _ in range(n):
        if pol.done:
            break
        arms = pol.ask()
        pol.tell(arms, env.pull(arms))
