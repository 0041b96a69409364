"""Corpus generators for the reliability tests: an ordinary mixed corpus with seeded edits
(crash safety, concurrency, doctor) and a hostile one (every kind of bad input)."""
