#!/usr/bin/python3
"""apply.py - reads a mutant file (tests/mutants/*.mut) and prints its fields,
or plants it in a source tree.

A mutant file holds '#' comment lines (what the bug is), then
    file: PATH (relative to the source tree's root)
    tests: NAME [NAME..] (ctest tests that must fail with the bug in place)
    env: VAR=VALUE [..] (optional: the tests run with these set, e.g.
         DDPTOP_MAX_CPU_ISA=avx2 for a bug in a path only AVX2 takes)
and one block, conflict-marker style:
    <<<<<<< original
    the lines as they are in PATH
    =======
    the same lines with the bug
    >>>>>>> mutant
The original lines must occur exactly once in PATH: a mutant whose code has
moved on is an error, never a silent no-op.

Usage: apply.py MUTANT field file|tests      prints the field
       apply.py MUTANT plant SRCROOT         writes the bug into SRCROOT/PATH
       apply.py check SRCROOT DIR            each DIR/*.mut parses and would apply
                                             (ctest mutants_apply: a mutant
                                             whose code moved on fails in
                                             the ordinary suite, not only
                                             in the harness)
Exit status 1 with a message when a file is malformed or does not apply.
"""
import glob
import sys


def parse(path):
    fields, block, state = {}, {"original": [], "mutant": []}, "head"
    for line in open(path).read().split("\n"):
        if state == "head" and line.startswith("<<<<<<< "):
            state = "original"
        elif state == "original" and line == "=======":
            state = "mutant"
        elif state == "mutant" and line.startswith(">>>>>>> "):
            state = "done"
        elif state in block:
            block[state].append(line)
        elif state == "head" and line and not line.startswith("#"):
            key, _, val = line.partition(":")
            fields[key.strip()] = val.strip()
    orig, mut = block["original"], block["mutant"]
    if state != "done" or not fields.get("file") or not fields.get("tests") or orig == mut:
        sys.exit("%s: needs file:, tests: and one original/mutant block that changes something" % path)
    return fields, "\n".join(orig) + "\n", "\n".join(mut) + "\n"


def planted(mutant, root):
    """The mutant's file under root with the bug in place."""
    fields, orig, mut = parse(mutant)
    text = open(root + "/" + fields["file"]).read()
    n = text.count(orig)
    if n != 1:
        sys.exit("%s: its original lines occur %d times in %s (once expected)" % (mutant, n, fields["file"]))
    return root + "/" + fields["file"], text.replace(orig, mut)


def main():
    if sys.argv[1] == "check":
        mutants = sorted(glob.glob(sys.argv[3] + "/*.mut"))
        if not mutants:
            sys.exit("no mutants in %s" % sys.argv[3])
        for m in mutants:
            planted(m, sys.argv[2])
        print("ok: %d mutants apply" % len(mutants))
        return
    mutant, what = sys.argv[1], sys.argv[2]
    if what == "field":
        print(parse(mutant)[0].get(sys.argv[3], ""))  # (env: optional)
        return
    target, text = planted(mutant, sys.argv[3])
    open(target, "w").write(text)


if __name__ == "__main__":
    main()
