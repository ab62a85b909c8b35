#!/usr/bin/env bash
# check_format.sh - every C source and header follows .clang-format.
# Skips (77) when clang-format is not installed.
set -u
cd "$(dirname "$0")/.." || exit 1
command -v clang-format >/dev/null || { echo "clang-format not installed: skipped"; exit 77; }
bad=0
for f in $(git ls-files '*.c' '*.h' 2>/dev/null || find src ui trace models collectives tests bench -name '*.[ch]'); do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (clang-format -i $f)"
        bad=$((bad + 1))
    fi
done
echo "$bad files need formatting"
[ "$bad" -eq 0 ]
