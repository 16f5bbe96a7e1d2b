#!/usr/bin/env python3
"""Checks of the repository's text that no compiler makes.

  check_tree.py notebook ROOT   no tracked text file refers to a work session or a tracker
                                entry by number (the word and a digit, in either case):
                                history belongs in commit messages, not in the tree.
  check_tree.py links ROOT      every relative link in every tracked *.md resolves to a file
                                or folder, and a link's #anchor to a heading of the target.
  check_tree.py doc-refs ROOT   every mention of docs/<page>.md#<anchor> in any tracked text file
                                (code comments cite the docs this way) names a heading that
                                exists.

Exits 1 and lists every offence as FILE:LINE: what; 0 when the tree is clean.
"""
import os
import re
import subprocess
import sys

NOTEBOOK = re.compile(r"[Ss]ession [0-9]|[Ii]ssue [0-9]")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
DOC_REF = re.compile(r"(?<![\w/.-])((?:\.\./)*docs/[\w.-]+\.md)#([\w-]+)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode("utf-8", "replace").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def read_text(path):
    """The file's text, or None for a binary file (a NUL byte in its first 8 KiB)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def slug(text):
    """GitHub's anchor for a heading: markup dropped, lowercase, punctuation other than - and
    _ removed, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def markdown_lines(text, blank_code=True):
    """(line number, line) outside fenced code blocks, inline code spans blanked unless
    blank_code is False."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"`[^`]*`", "``", line) if blank_code else line


def anchors(text):
    seen = {}
    result = set()
    for _, line in markdown_lines(text, blank_code=False):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
        result.add(m.group(1))
    return result


class AnchorCache:
    def __init__(self):
        self.cache = {}

    def get(self, path):
        if path not in self.cache:
            text = read_text(path)
            self.cache[path] = anchors(text) if text is not None else set()
        return self.cache[path]


def check_notebook(root, files):
    bad = []
    for rel in files:
        text = read_text(os.path.join(root, rel))
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            m = NOTEBOOK.search(line)
            if m:
                bad.append(f"{rel}:{number}: '{m.group(0)}' (history goes in commit messages)")
    return bad


def check_target(root, rel, target, cache):
    """An error message for a relative link `target` written in file `rel`, or None."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return None  # absolute URL (https:, mailto:, ...)
    path, _, anchor = target.partition("#")
    base = os.path.dirname(os.path.join(root, rel))
    full = os.path.normpath(os.path.join(base, path)) if path else os.path.join(root, rel)
    if path.startswith("/"):
        full = os.path.normpath(os.path.join(root, path.lstrip("/")))
    if not os.path.exists(full):
        return f"link to '{target}': no such file"
    if anchor and full.endswith(".md") and anchor not in cache.get(full):
        return f"link to '{target}': no heading with anchor '#{anchor}' in {os.path.relpath(full, root)}"
    return None


def check_links(root, files):
    bad = []
    cache = AnchorCache()
    for rel in files:
        if not rel.endswith(".md"):
            continue
        text = read_text(os.path.join(root, rel))
        if text is None:
            continue
        for number, line in markdown_lines(text):
            targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
            m = REF_LINK.match(line)
            if m:
                targets.append(m.group(1))
            for target in targets:
                error = check_target(root, rel, target, cache)
                if error:
                    bad.append(f"{rel}:{number}: {error}")
    return bad


def check_doc_refs(root, files):
    bad = []
    cache = AnchorCache()
    for rel in files:
        text = read_text(os.path.join(root, rel))
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for m in DOC_REF.finditer(line):
                doc = os.path.normpath(os.path.join(root, re.sub(r"^(\.\./)*", "", m.group(1))))
                if not os.path.exists(doc):
                    bad.append(f"{rel}:{number}: cites {m.group(1)}, which does not exist")
                elif m.group(2) not in cache.get(doc):
                    bad.append(f"{rel}:{number}: cites {m.group(1)}#{m.group(2)}: no such heading")
    return bad


def main(argv):
    checks = {"notebook": check_notebook, "links": check_links, "doc-refs": check_doc_refs}
    if len(argv) != 3 or argv[1] not in checks:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.abspath(argv[2])
    files = tracked_files(root)
    bad = checks[argv[1]](root, files)
    for line in bad:
        print(line)
    print(f"{argv[1]}: {len(files)} tracked files, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
