"""From a line of code to the agent session behind it.

Every file edit an ingested session made is stored as data (`chinvex.storage.edits`): the file
it touched and the hashes of the lines it added. `blame` reads a file's lines, asks git which
commit last touched each one, and finds the sessions whose edits added that text; `timeline`
lays sessions and commits side by side, day by day.
"""
