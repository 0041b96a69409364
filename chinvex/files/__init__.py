"""Reading a user's files safely: walking a tree, honouring excludes, decoding text, frontmatter.

Both the engine (watching, recall indexing) and the adapters need these, so they live below
both and import nothing but `chinvex.timeutil`.
"""
