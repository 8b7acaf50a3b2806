#!/usr/bin/env python3
"""Checks that the code names a page of docs/ cites still exist in the code.

The convention (docs/architecture.md states it for its readers): a span in backticks is a code name when it looks
like one, and then it must exist:

- a path: a span with a `/` in it, or a file name ending in .cpp, .h, .c, .cmake, .sh or .py. It must exist relative
  to src/ (the page's file names are relative to src/) or else to the repository root (`scripts/planner-e2e.sh`,
  `emulator/`); a bare file name (`npu_worker.cpp`) must be a file somewhere under src/ or emulator/.
- an identifier: letters, digits and `_`, starting with a letter or `_`, optionally qualified with `::` and ending
  in `()` (`compute_engine::participants`, `begin()`), or `NAME=value` with NAME such an identifier. It must occur as
  a whole word in the code of src/ or emulator/ (comments left out, so a name that lives on only in a comment counts
  as gone). A qualified name `a::b` also needs `b` between the braces of a definition of `a` (a class, struct,
  union, enum or namespace), or `a::b` written out in the code; each qualifier must occur too.

In a fenced block (a diagram), where names are not in backticks, every qualified name (`a::b`) and every path with
a folder and a file name ending in .cpp or .h (`backend/compute.cpp`) is checked the same way.

Everything else in backticks (commands, values, names with `*` or `...`, spans with spaces) is not checked. Names
from outside the project (ggml, llama.cpp, XRT, files the build generates) are listed in backticks under a heading
"Names from elsewhere", which is not checked and whose names are skipped everywhere on the page. The code is read
as text, not compiled: what the preprocessor leaves out of a build still counts.

Usage: check_code_names.py PAGE.md [REPO_ROOT]. Exits 1, naming every missing name and the line it is cited on.
"""

import os
import re
import sys

CODE_DIRS = ("src", "emulator")
SOURCE_EXT = (".cpp", ".cc", ".c", ".h", ".hpp", ".inc")
PATH_EXT = (".cpp", ".h", ".c", ".cmake", ".sh", ".py")
EXEMPT_HEADING = "names from elsewhere"

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*(\(\))?$")
ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=\S*$")
PATH = re.compile(r"^[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*/?$")
SPAN = re.compile(r"`([^`\n]+)`")
# in a fenced block: qualified names and source paths
BLOCK_NAME = re.compile(r"(?<![\w:])[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?|"
                        r"(?<![\w/.-])[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.(?:cpp|h)\b")


def strip_comments(text):
    """C/C++ source without its comments (string and character literals kept, comments replaced by a space)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Code:
    """The code of src/ and emulator/, comments left out, file by file."""

    def __init__(self, root):
        self.root = root
        self.files = {}   # path relative to root -> code without comments
        self.names = set()   # basenames of every file under the code folders
        for d in CODE_DIRS:
            for dirpath, _, filenames in os.walk(os.path.join(root, d)):
                for f in filenames:
                    self.names.add(f)
                    if f.endswith(SOURCE_EXT):
                        p = os.path.join(dirpath, f)
                        with open(p, encoding="utf-8", errors="replace") as fh:
                            self.files[os.path.relpath(p, root)] = strip_comments(fh.read())
        self.all = "\n".join(self.files.values())
        self._words = None

    def words(self):
        if self._words is None:
            self._words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", self.all))
        return self._words

    def has_word(self, w):
        return w in self.words()

    def bodies(self, scope):
        """The bodies (between the braces) of every definition of `scope` as a class, struct, union, enum or
        namespace; a declaration alone (`struct a;`) has none."""
        pat = re.compile(r"\b(?:class|struct|union|enum(?:\s+class)?|namespace)\s+" + re.escape(scope) + r"\b")
        out = []
        for t in self.files.values():
            for m in pat.finditer(t):
                i = m.end()
                while i < len(t) and t[i] not in "{;":
                    i += 1
                if i >= len(t) or t[i] == ";":
                    continue
                depth, j = 0, i
                while j < len(t):
                    depth += {"{": 1, "}": -1}.get(t[j], 0)
                    if depth == 0:
                        break
                    j += 1
                out.append(t[i:j + 1])
        return out

    def has_qualified(self, parts):
        for p in parts:
            if not self.has_word(p):
                return False
        scope, member = parts[-2], parts[-1]
        if re.search(r"\b" + re.escape(scope) + r"\s*::\s*" + re.escape(member) + r"\b", self.all):
            return True
        word = re.compile(r"\b" + re.escape(member) + r"\b")
        return any(word.search(b) for b in self.bodies(scope))

    def has_path(self, p):
        if "/" not in p.rstrip("/"):
            if p.endswith("/"):
                return os.path.isdir(os.path.join(self.root, "src", p)) or os.path.isdir(os.path.join(self.root, p))
            return p in self.names
        return (os.path.exists(os.path.join(self.root, "src", p)) or
                os.path.exists(os.path.join(self.root, p)))


def kind_of(span):
    """('path', p), ('ident', [parts]) or None: what a span in backticks cites, by the convention above."""
    if " " in span or "*" in span or "..." in span:
        return None
    if ("/" in span or span.endswith(PATH_EXT)) and PATH.match(span):
        return ("path", span)
    m = ASSIGN.match(span)
    if m:
        span = m.group(1)
    if IDENT.match(span):
        name = span[:-2] if span.endswith("()") else span
        return ("ident", name.split("::"))
    return None


def cited(page_text):
    """(line number, span) of every span in backticks outside fenced blocks and of every qualified name or source
    path inside them, and the names the page exempts."""
    spans, exempt = [], set()
    in_code, in_exempt = False, False
    for no, line in enumerate(page_text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            spans.extend((no, s) for s in BLOCK_NAME.findall(line))
            continue
        if line.startswith("#"):
            in_exempt = line.lstrip("#").strip().lower().startswith(EXEMPT_HEADING)
            continue
        for s in SPAN.findall(line):
            (exempt.add(s) if in_exempt else spans.append((no, s)))
    return spans, exempt


def missing(page_text, code):
    """(line number, span, why) of every code name the page cites that the code does not have."""
    spans, exempt = cited(page_text)
    out = []
    for no, s in spans:
        if s in exempt:
            continue
        k = kind_of(s)
        if k is None:
            continue
        if k[0] == "path":
            if not code.has_path(k[1]):
                out.append((no, s, "no such file or folder under src/ or the repository root"))
        elif len(k[1]) == 1:
            if not code.has_word(k[1][0]):
                out.append((no, s, "does not occur in the code of " + " or ".join(d + "/" for d in CODE_DIRS)))
        elif not code.has_qualified(k[1]):
            out.append((no, s, "no '%s' in a definition of '%s', nor '%s' written out" %
                        (k[1][-1], k[1][-2], "::".join(k[1][-2:]))))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    page = argv[1]
    root = argv[2] if len(argv) > 2 else os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(page, encoding="utf-8") as f:
        text = f.read()
    code = Code(root)
    spans, _ = cited(text)
    bad = missing(text, code)
    checked = sum(1 for _, s in spans if kind_of(s) is not None)
    for no, s, why in bad:
        print("%s:%d: `%s`: %s" % (page, no, s, why))
    if bad:
        print("%d of the %d code names %s cites are not in the code: correct the page (or, for a name from outside "
              "the project, list it under \"Names from elsewhere\")" % (len(bad), checked, os.path.basename(page)))
        return 1
    print("%s: all %d code names it cites are in the code" % (os.path.basename(page), checked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
