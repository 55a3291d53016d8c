"""The shipped leaf tools. Importing this package registers every one of them.

Files (toolset ``fs``; the read-only ones also ``fs_read``): read, write, edit, glob,
grep, list_dir — all confined to the turn's workspace. Shell (``runtime``): bash.
Web (``web``): web_fetch, web_search. Interaction (``interaction``): ask_user_question,
todo_write, todo_read.
"""

from openprogram.programs.builtin.ask_user_question import ask_user_question
from openprogram.programs.builtin.bash import bash
from openprogram.programs.builtin.edit import edit
from openprogram.programs.builtin.glob import glob
from openprogram.programs.builtin.grep import grep
from openprogram.programs.builtin.list_dir import list_dir
from openprogram.programs.builtin.read import read
from openprogram.programs.builtin.todo import todo_read, todo_write
from openprogram.programs.builtin.web_fetch import web_fetch
from openprogram.programs.builtin.web_search import web_search
from openprogram.programs.builtin.write import write

__all__ = [
    "ask_user_question",
    "bash",
    "edit",
    "glob",
    "grep",
    "list_dir",
    "read",
    "todo_read",
    "todo_write",
    "web_fetch",
    "web_search",
    "write",
]
