"""``graphboard diagnose``: where an overflow or NaN was born, which op is not deterministic,
and what to dump next (docs/diagnose.md holds the rules and their derivations)."""
