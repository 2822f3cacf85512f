#!/usr/bin/env python3
"""Checks the relative links of README.md and docs/*.md: every linked file
exists, and every #anchor names a heading of its page (GitHub's slugs).
Prints each broken link as file:line and exits 1 if there is one.

    python3 scripts/check_doc_links.py
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")


def prose(path):
    """(line number, line) outside fenced code, with inline code removed."""
    fence = False
    for n, line in enumerate(path.read_text().split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield n, re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped
    (hyphens and underscores kept), spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip()).lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    fence = False
    for line in path.read_text().split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return out


def main():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = 0
    for page in pages:
        for n, line in prose(page):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # https:, mailto:
                file, _, anchor = target.partition("#")
                dest = (page.parent / file).resolve() if file else page
                where = f"{page.relative_to(ROOT)}:{n}: {target}"
                if not dest.exists():
                    print(f"{where}: no such file")
                    broken += 1
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    print(f"{where}: no heading with this anchor in {dest.relative_to(ROOT)}")
                    broken += 1
    print(f"{len(pages)} pages, {broken} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
