"""The curator: pure rules (text normalisation and matching, the memory book,
promotion, the model-answer check) apart from their I/O (the raw.md scan, the
candidate record, the journal and its commit). `curate.curate` is the entry point.
"""
