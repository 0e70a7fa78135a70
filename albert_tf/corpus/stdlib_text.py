"""English prose from the installed Python standard library, with no download.

Sources, in a fixed order: the Language Reference topics shipped in `pydoc_data.topics` (one
document per topic), then the docstrings of every stdlib module file (one document per
module), read with `ast` so nothing is imported or executed. Tests, test data, `encodings`,
`idlelib` and `this.py` (rot13) are left out. Code samples, doctests, tables and headings are
dropped; the remaining paragraphs are split into sentences.

The text is the Python documentation (PSF License, https://docs.python.org/3/license.html).
The result depends on the Python version but is deterministic for a given installation.
"""

from __future__ import annotations

import ast
import os
import re
import sysconfig
from typing import Iterator

_EXCLUDED_DIRS = {"test", "tests", "idle_test", "idlelib", "encodings", "site-packages",
                  "dist-packages", "__pycache__", "lib2to3", "ensurepip", "turtledemo"}
_EXCLUDED_FILES = {"this.py", "antigravity.py", "__phello__.foo.py"}
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z\"'(\[])")
_WORD = re.compile(r"[A-Za-z]{2,}")


def stdlib_dir() -> str:
    return sysconfig.get_paths()["stdlib"]


def module_files(root: str | None = None) -> list[str]:
    """Sorted paths of the stdlib's .py files, exclusions applied."""
    root = root or stdlib_dir()
    found = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in _EXCLUDED_DIRS and not d.startswith("config-"))
        for name in sorted(files):
            if name.endswith(".py") and name not in _EXCLUDED_FILES and not name.startswith("_sysconfigdata"):
                found.append(os.path.join(directory, name))
    return sorted(found, key=lambda p: os.path.relpath(p, root))


def _is_prose(paragraph: str) -> bool:
    lines = paragraph.splitlines()
    if not lines or any(line.lstrip().startswith((">>>", "...", "$ ", "%")) for line in lines):
        return False
    if all(line[:1].isspace() for line in lines):  # indented: code, grammar or a quoted block
        return False
    text = " ".join(lines)
    if text.rstrip().endswith("::") and len(_WORD.findall(text)) < 4:
        return False
    visible = [c for c in text if not c.isspace()]
    letters = sum(c.isalpha() for c in visible)
    return len(_WORD.findall(text)) >= 4 and letters >= 0.75 * len(visible)


def sentences_of(text: str) -> list[str]:
    """Prose sentences of a docstring or topic text, one per list entry."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text.replace("\r", "")):
        if not _is_prose(paragraph):
            continue
        flat = " ".join(paragraph.split())
        for sentence in _SENTENCE_END.split(flat):
            sentence = sentence.strip()
            if len(_WORD.findall(sentence)) >= 3 and len(sentence) <= 1000:
                out.append(sentence)
    return out


def _docstrings(tree: ast.AST) -> Iterator[str]:
    """Docstrings of a module, its classes and functions, in source order."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield doc
        children = [c for c in ast.iter_child_nodes(node)
                    if isinstance(c, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
        stack.extend(reversed(children))


def _topic_texts(root: str) -> list[tuple[str, str]]:
    path = os.path.join(root, "pydoc_data", "topics.py")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            topics = ast.literal_eval(node.value)
            return [(name, topics[name]) for name in sorted(topics)]
    return []


def iter_documents(root: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """(source name, sentences) per document: Language Reference topics, then modules."""
    root = root or stdlib_dir()
    for name, text in _topic_texts(root):
        sentences = sentences_of(text)
        if len(sentences) >= 2:
            yield f"pydoc_data.topics[{name}]", sentences
    for path in module_files(root):
        if path.endswith(os.path.join("pydoc_data", "topics.py")):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        sentences = [s for doc in _docstrings(tree) for s in sentences_of(doc)]
        if len(sentences) >= 2:
            yield os.path.relpath(path, root), sentences
