#!/usr/bin/env python3
"""check_docs.py - the README and docs/ hold together.

Every relative link in README.md and docs/*.md must name a file of the
tree, and a link with an anchor (#section) must name a heading of that
file (GitHub's anchor rule: lower case, punctuation dropped, spaces to
hyphens). The README stays under 300 lines, and its "Two commands"
section holds the two sh blocks that .ci/run reads. Every file in docs/
is linked from the README or from another doc, so none is lost. Every key
the JSON report writes (src/report_json.c) is named in tests/README.md's table
of where each figure's expected value comes from.

Usage: tests/check_docs.py [ROOT]   (exit 1 on a problem, listing each)
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchor(heading):
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def headings(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(anchor(line.lstrip("#")))
    return out


def main():
    problems = []
    docs = sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    files = ["README.md"] + docs
    linked = set()
    for rel in files:
        path = os.path.join(ROOT, rel)
        fence = False
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, https:, mailto:
                file, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
                if not os.path.exists(dest):
                    problems.append(f"{rel}:{n}: link to {target}: no such file")
                    continue
                linked.add(os.path.relpath(dest, ROOT))
                if frag and dest.endswith(".md") and frag not in headings(dest):
                    problems.append(f"{rel}:{n}: link to {target}: no heading #{frag} there")
    for d in docs:
        if d not in linked:
            problems.append(f"{d}: not linked from the README or another doc")
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().split("\n")
    if len(readme) > 300:
        problems.append(f"README.md: {len(readme)} lines, over 300 (move the detail to docs/)")
    section, blocks = None, 0
    for line in readme:
        if line.startswith("## "):
            section = line
        elif section and "Two commands" in section and line.startswith("```sh"):
            blocks += 1
    if blocks != 2:
        problems.append(f"README.md: the 'Two commands' section holds {blocks} sh blocks, .ci/run reads 2")
    # the JSON report's keys, as report_json.c writes them, each in the table
    src = open(os.path.join(ROOT, "src", "report_json.c"), encoding="utf-8").read()
    keys = set(re.findall(r'(?:add_\w+|cJSON_Add\w+ToObject)\(\w+(?:->\w+)?, "(\w+)"', src))
    table = open(os.path.join(ROOT, "tests", "README.md"), encoding="utf-8").read()
    if len(keys) < 50:
        problems.append(f"src/report_json.c: only {len(keys)} JSON keys found; has the way it writes them changed?")
    for k in sorted(keys):
        if not re.search(r"[`.]" + k + r"[`.\[]", table):  # `k`, `a.k`, `k[]`, `k.x`
            problems.append(f"tests/README.md: the JSON key `{k}` is in no row (which test holds it, and to what)")
    for p in problems:
        print(p)
    print(f"check_docs: {len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
