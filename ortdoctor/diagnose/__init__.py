"""Diagnose: facts, plan and proofs -> findings; and error text -> findings (the classifier)."""
