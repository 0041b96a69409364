"""The adapter kit: what every session adapter needs and none should write again.

- `text`: text hygiene (no NULs, lone surrogates or base64 reach the index) and shortening;
- `walk`: walking a root safely (sorted, excludes, no symlink loops);
- `gitwalk`, `gitutil`, `scan`, `generated`: listing a tree as git sees it (gitignore frames,
  `git ls-files`) and screening each file (names, generated files, binary content);
- `filetype`, `textfile`: telling text from binary, and reading one text file for `parse`;
- `jsonl`: tolerant line-by-line JSON reading (a half-written last line is left for later);
- `jsonfile`: a whole JSON document, with one clear line when it is not readable;
- `sniff`: a file's first records or bytes, to tell formats apart by content;
- `turns`: the one way turns are built (messages, thinking, tool calls paired with their
  results, file edits as structured metadata), so every agent lands in the same shape;
- `edits`: file edits recognised from the tool calls of every agent;
- `sessionfile`: a base class for adapters whose sessions are files under a store folder;
- `registry`: how an agent package describes itself (its adapter and where its stores are).
"""
