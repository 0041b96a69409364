"""kit.edits: file edits recognised from every agent's tool calls, and patches split by file."""

from __future__ import annotations

import pytest

from chinvex_adapters.kit.edits import MAX_EDIT_CHARS, edits_from_call, patch_edits, resolve, search_replace_blocks


@pytest.mark.parametrize("name, args, path, new", [
    ("Edit", {"file_path": "/r/a.py", "old_string": "x = 1", "new_string": "x = 2"}, "/r/a.py", "x = 2"),
    ("Write", {"file_path": "b.py", "content": "print(1)\n"}, "/cwd/b.py", "print(1)\n"),
    ("replace", {"file_path": "/r/c.go", "old_string": "a", "new_string": "b"}, "/r/c.go", "b"),
    ("write_file", {"file_path": "d.md", "content": "# D"}, "/cwd/d.md", "# D"),
    ("edit", {"filePath": "/r/e.ts", "oldString": "let", "newString": "const"}, "/r/e.ts", "const"),
    ("write_to_file", {"path": "f.txt", "content": "f"}, "/cwd/f.txt", "f"),
    ("str_replace_editor", {"command": "create", "path": "/r/g.py", "file_text": "g"}, "/r/g.py", "g"),
    ("mcp__fs__edit_file", {"path": "h.py", "old_str": "h", "new_str": "H"}, "/cwd/h.py", "H"),
    ("developer__text_editor", {"command": "str_replace", "path": "/r/i.rs", "old_str": "i", "new_str": "I"}, "/r/i.rs", "I"),
    ("edit", {"path": "j.py", "before": "j", "after": "J"}, "/cwd/j.py", "J"),  # goose
    ("StrReplace", {"path": "/r/k.js", "old_string": "k", "new_string": "K"}, "/r/k.js", "K"),  # Cursor
    ("editor", {"path": "/r/l.md", "old_text": "l", "new_text": "L"}, "/r/l.md", "L"),  # Cline SDK
    ("new_rule", {"path": ".clinerules/m.md", "content": "M"}, "/cwd/.clinerules/m.md", "M"),
])
def test_each_agents_edit_tools(name, args, path, new):
    (edit,) = edits_from_call(name, args, "/cwd")
    assert edit.abs_path == path and edit.new_text == new


def test_multi_edit_and_search_replace_blocks():
    edits = edits_from_call("MultiEdit", {"file_path": "/r/m.py", "edits": [
        {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]})
    assert [e.new_text for e in edits] == ["b", "d"]
    diff = "------- SEARCH\nold line\n=======\nnew line\n+++++++ REPLACE\n"
    (edit,) = edits_from_call("replace_in_file", {"path": "s.py", "diff": diff}, "/w")
    assert (edit.old_text, edit.new_text, edit.abs_path) == ("old line", "new line", "/w/s.py")
    assert search_replace_blocks("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE") == [("x", "y")]


def test_codex_patch_and_unified_diff_split_by_file():
    patch = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n-old\n+new\n*** Add File: b.txt\n+hello\n"
             "*** Update File: c.py\n*** Move to: d.py\n@@\n+moved\n*** Delete File: e.py\n*** End Patch")
    edits = edits_from_call("apply_patch", {"input": patch}, "/w")
    assert [(e.path, e.op) for e in edits] == [("src/a.py", "patch"), ("b.txt", "write"), ("d.py", "patch"),
                                                ("e.py", "delete")]
    assert edits[0].old_text == "old" and edits[1].new_text == "hello"
    unified = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-1\n+2\n"
    (edit,) = patch_edits(unified, "/w")
    assert edit.abs_path == "/w/x.py" and edit.new_text == "2"


def test_deletes():
    (gone,) = edits_from_call("delete_file", {"target_file": "old.py"}, "/w")
    assert (gone.op, gone.abs_path, gone.new_text) == ("delete", "/w/old.py", None)


def test_not_edits_and_paths():
    assert edits_from_call("Read", {"file_path": "/r/a.py"}) == []
    assert edits_from_call("Bash", {"command": "echo > f"}) == []
    assert edits_from_call("Edit", "not json") == []
    assert resolve("rel.py", None) is None
    assert resolve("file:///C:/w/x.py", None) == "C:\\w\\x.py"
    assert resolve("..\\y.py", "C:\\w\\sub") == "C:\\w\\y.py"


def test_huge_texts_are_capped_and_say_so():
    (edit,) = edits_from_call("Write", {"file_path": "/r/big", "content": "x" * (MAX_EDIT_CHARS + 10)})
    assert edit.truncated and len(edit.new_text) == MAX_EDIT_CHARS


# -- heredocs in shell commands -------------------------------------------------------------------

def test_a_heredoc_redirected_to_one_file_is_a_write():
    from chinvex_adapters.kit.edits import edits_from_call

    [plan] = edits_from_call("bash", {"command": "cat > /tmp/plan.md << 'EOF'\n# Plan\nstep one\nEOF\necho done"})
    assert (plan.path, plan.op, plan.new_text) == ("/tmp/plan.md", "write", "# Plan\nstep one")
    [notes] = edits_from_call("exec_command", {"cmd": "cat <<EOF > notes/a.txt\nhello\nEOF", "workdir": "/w"})
    assert notes.abs_path == "/w/notes/a.txt"
    [log] = edits_from_call("shell", {"command": ["bash", "-lc", "tee -a log.txt <<'X'\nline\nX"]}, "/p")
    assert (log.abs_path, log.op, log.new_text) == ("/p/log.txt", "edit", "line")
    [code] = edits_from_call("Bash", '{"command": "cat > x.py <<\'PY\'\\nprint(2)\\nPY"}', "/r")
    assert code.abs_path == "/r/x.py" and code.new_text == "print(2)"


def test_an_ambiguous_heredoc_is_not_an_edit():
    from chinvex_adapters.kit.edits import edits_from_call

    for command in ("cat a.txt b.txt > c.txt <<EOF\nx\nEOF",  # inputs besides the heredoc
                    "cat > $OUT <<EOF\nx\nEOF",                # a variable as target
                    "cat <<EOF | python\nprint(1)\nEOF",       # piped, not written
                    "cat > a.txt > b.txt <<EOF\nx\nEOF",       # two targets
                    "echo hi > a.txt"):                        # no heredoc
        assert edits_from_call("bash", {"command": command}) == [], command
