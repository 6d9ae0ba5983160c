#!/usr/bin/env python3
"""Counts the stored instance properties of each type declared in Swift files, from the source text.

usage: scripts/stored-properties.py [--max N] [--max-lines L] PATH...

A `let` or `var` declared one level inside a type's braces counts, unless it is static or computed: a `{` after its
type (not inside an initial value) opens a getter, unless it opens `didSet`/`willSet` observers. Extensions cannot
add stored properties, so a type is counted where it is declared. Prints each type with its count (with --max, only
those over N, and exits 1 when there is one). With --max-lines, also lists each file longer than L lines, and exits
1 when there is one.
"""
import os
import re
import sys

TYPE = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final)\s+)*"
                  r"(?:class|struct|enum|actor)\s+(\w+)")
PROPERTY = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)(?:\(set\))?\s+|"
                      r"(?:nonisolated|lazy|weak|unowned(?:\([^)]*\))?)\s+)*(?:let|var)\s+\w+(.*)$")
STATIC = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)*(?:static|class)\s")


def code(line):
    """The line without string contents and comments."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', line).split("//", 1)[0]


def types_in(path):
    found = []
    stack = []  # [name, depth of its members, count]
    depth = 0
    pending = None  # the type whose last property opened a brace: observers or a getter?
    with open(path) as source:
        for raw in source:
            line = code(raw)
            if pending is not None:
                if re.match(r"^\s*(didSet|willSet)\b", line):
                    pending[2] += 1
                pending = None
            if stack and depth == stack[-1][1] and not STATIC.match(line):
                match = PROPERTY.match(line)
                if match:
                    rest = match.group(1)
                    before_value = rest.split("=", 1)[0]
                    if "{" not in before_value:
                        stack[-1][2] += 1
                    elif re.search(r"\{\s*(didSet|willSet)\b", rest):
                        stack[-1][2] += 1
                    elif rest.rstrip().endswith("{"):
                        pending = stack[-1]
            match = TYPE.match(line)
            if match and "{" in line:
                stack.append([match.group(1), depth + 1, 0])
            depth += line.count("{") - line.count("}")
            while stack and depth < stack[-1][1]:
                name, _, number = stack.pop()
                found.append((name, number))
    return found


def main():
    arguments = sys.argv[1:]
    limit = None
    max_lines = None
    while arguments[:1] in (["--max"], ["--max-lines"]):
        if arguments[0] == "--max":
            limit = int(arguments[1])
        else:
            max_lines = int(arguments[1])
        arguments = arguments[2:]
    over = False
    paths = []
    for root in arguments:
        if os.path.isfile(root):
            paths.append(root)
        for directory, _, files in sorted(os.walk(root)):
            paths += [os.path.join(directory, name) for name in sorted(files) if name.endswith(".swift")]
    for path in paths:
        if max_lines is not None:
            with open(path) as source:
                lines = sum(1 for _ in source)
            if lines > max_lines:
                print("%s: %d lines (more than %d)" % (path, lines, max_lines))
                over = True
        for type_name, number in types_in(path):
            if limit is None or number > limit:
                print("%3d %s (%s)" % (number, type_name, path))
            over = over or (limit is not None and number > limit)
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
