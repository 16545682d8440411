"""Choosing how captures keep lineage from costs measured on a sample run
(``keep.choose_keep``: payloads or pairs per declared function, under budgets)."""
