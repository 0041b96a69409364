"""Embedders behind one small interface, and the tokenizer that sizes chunks for them."""
