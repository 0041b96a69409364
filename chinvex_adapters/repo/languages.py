"""File name -> language label stored in `metadata["language"]`.

The chunker picks its strategy from this label (tree-sitter grammar, markdown headings, plain
windows), and search can filter on it, so labels are lower-case names, not MIME types.
"""

from __future__ import annotations

from chinvex_adapters.kit.filetype import extension_of

_BY_EXTENSION: dict[str, str] = {
    "py": "python", "pyi": "python", "pyw": "python", "pyx": "cython",
    "ipynb": "jupyter",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "tsx",
    "go": "go", "rs": "rust",
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "c++": "cpp", "hh": "cpp", "hpp": "cpp",
    "hxx": "cpp", "ipp": "cpp", "inl": "cpp",
    "m": "objective-c", "mm": "objective-cpp",
    "cs": "csharp", "fs": "fsharp", "fsx": "fsharp", "vb": "vbnet",
    "java": "java", "kt": "kotlin", "kts": "kotlin", "scala": "scala", "sc": "scala",
    "groovy": "groovy", "gradle": "groovy", "clj": "clojure", "cljs": "clojure",
    "swift": "swift", "dart": "dart",
    "rb": "ruby", "rake": "ruby", "gemspec": "ruby",
    "php": "php", "pl": "perl", "pm": "perl", "lua": "lua", "r": "r", "jl": "julia",
    "ex": "elixir", "exs": "elixir", "erl": "erlang", "hrl": "erlang",
    "hs": "haskell", "ml": "ocaml", "mli": "ocaml", "elm": "elm", "nim": "nim", "zig": "zig",
    "v": "v", "sol": "solidity",
    "sh": "shell", "bash": "shell", "zsh": "shell", "fish": "fish", "ksh": "shell",
    "ps1": "powershell", "psm1": "powershell", "bat": "batch", "cmd": "batch",
    "html": "html", "htm": "html", "xhtml": "html",
    "css": "css", "scss": "scss", "sass": "sass", "less": "less",
    "vue": "vue", "svelte": "svelte", "astro": "astro",
    "md": "markdown", "markdown": "markdown", "mdx": "markdown", "mdown": "markdown",
    "rst": "restructuredtext", "adoc": "asciidoc", "asciidoc": "asciidoc", "org": "org",
    "tex": "latex", "bib": "bibtex",
    "txt": "text", "text": "text", "log": "text",
    "json": "json", "jsonc": "json", "json5": "json", "jsonl": "jsonl", "ndjson": "jsonl",
    "geojson": "json",
    "yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini", "cfg": "ini", "conf": "ini",
    "properties": "properties", "env": "dotenv",
    "xml": "xml", "xsd": "xml", "xsl": "xml", "svg": "svg", "plist": "xml",
    "csv": "csv", "tsv": "tsv",
    "sql": "sql", "graphql": "graphql", "gql": "graphql", "proto": "protobuf",
    "tf": "terraform", "tfvars": "terraform", "hcl": "hcl", "nix": "nix",
    "cmake": "cmake", "mk": "make", "dockerfile": "dockerfile",
    "diff": "diff", "patch": "diff",
}

_BY_NAME: dict[str, str] = {
    "makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile",
    "containerfile": "dockerfile", "cmakelists.txt": "cmake", "gemfile": "ruby",
    "rakefile": "ruby", "vagrantfile": "ruby", "podfile": "ruby", "justfile": "make",
    "procfile": "text", "jenkinsfile": "groovy", "build.bazel": "starlark",
    "build": "starlark", "workspace": "starlark",
    ".bashrc": "shell", ".zshrc": "shell", ".profile": "shell", ".bash_profile": "shell",
    ".gitignore": "gitignore", ".dockerignore": "gitignore", ".gitattributes": "text",
    ".editorconfig": "ini", ".env": "dotenv",
    "license": "text", "licence": "text", "copying": "text", "authors": "text",
    "readme": "text", "changelog": "text", "notice": "text",
}


def language_for(name: str) -> str:
    """Language label for a file name (not a path); 'text' when nothing is known."""
    lower = name.lower()
    if lower in _BY_NAME:
        return _BY_NAME[lower]
    if lower.startswith("dockerfile.") or lower.endswith(".dockerfile"):
        return "dockerfile"
    if lower.startswith(".env."):
        return "dotenv"
    return _BY_EXTENSION.get(extension_of(lower), "text")
