"""Make ``openprogram/programs/related_words.txt`` from Princeton WordNet 3.0.

``python -m tools.related_words [WORDNET_DIR]`` (default ``/usr/share/wordnet``, Debian's
``wordnet-base`` package; needed only to regenerate the file, never at run time).

For every single-word noun and verb, its most common sense (WordNet lists senses by
frequency) gives the related words: the sense's other words (synonyms: compute →
calculate), its direct hypernyms (movie → show), and its derivationally related forms
(translate → translation). Words are stored as the search index's Snowball stems, so the
file must be made again if the stemming changes (a unit test checks that its keys still
meet the index's stems).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

from openprogram.programs._search_index import search_terms

OUT = Path(__file__).resolve().parent.parent / "openprogram" / "programs" / "related_words.txt"
_POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj"}
_POINTERS = {"@", "+"}  # hypernym, derivationally related form
_HEADER = """\
# Related words for tool_search's query expansion: "stem<TAB>stem stem ...", made by
# tools/related_words.py from WordNet 3.0 (most common sense of each noun and verb:
# synonyms, direct hypernyms, derivationally related forms; Snowball stems).
# WordNet's licence, as it ships with the database:
#
"""
_LICENCE_LINE = re.compile(r"^  \d+ ?(.*?)\s*$")

Synset = tuple[list[str], list[tuple[str, str]]]


def _single(lemma: str) -> bool:
    """One plain word ("tv", "movie"), not a phrase ("moving_picture") or "o'clock"."""
    return len(lemma) > 1 and lemma.isascii() and lemma.isalnum()


def _synsets(folder: Path, pos: str) -> dict[str, Synset]:
    """offset → (single-word lemmas, [(pointed-to part of speech, offset)])."""
    synsets: dict[str, Synset] = {}
    for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):  # the licence header
            continue
        parts = line.split()
        count = int(parts[3], 16)
        lemmas = [parts[4 + 2 * i].lower() for i in range(count)]
        at = 4 + 2 * count
        pointers = []
        for i in range(int(parts[at])):
            symbol, offset, part = parts[at + 1 + 4 * i : at + 4 + 4 * i]
            if symbol in _POINTERS and part in _POS:  # adverbs are left out
                pointers.append((_POS[part], offset))
        synsets[parts[0]] = ([lemma for lemma in lemmas if _single(lemma)], pointers)
    return synsets


def _first_senses(folder: Path, pos: str) -> dict[str, str]:
    """lemma → offset of its most common sense."""
    first: dict[str, str] = {}
    for line in (folder / f"index.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue
        parts = line.split()
        if _single(parts[0]):
            first[parts[0]] = parts[6 + int(parts[3])]
    return first


def related_words(folder: Path) -> dict[str, set[str]]:
    """Stem of each noun and verb → stems of the words related to its commonest sense."""
    synsets = {pos: _synsets(folder, pos) for pos in ("noun", "verb", "adj")}
    related: dict[str, set[str]] = defaultdict(set)
    for pos in ("noun", "verb"):
        for lemma, offset in _first_senses(folder, pos).items():
            lemmas, pointers = synsets[pos][offset]
            words = list(lemmas)
            for part, target in pointers:
                words.extend(synsets[part][target][0])
            (stem,) = search_terms(lemma)
            related[stem].update(s for word in words for s in search_terms(word) if s != stem)
    return {stem: words for stem, words in related.items() if words}


def _licence(folder: Path) -> str:
    """WordNet's licence, which must appear on all copies: the data files' own header."""
    lines = []
    for line in (folder / "data.noun").read_text(encoding="latin-1").splitlines():
        match = _LICENCE_LINE.match(line)
        if match is None:
            break
        lines.append(f"# {match.group(1)}".rstrip())
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "/usr/share/wordnet")
    if not (folder / "data.noun").is_file():
        print(f"no WordNet 3.0 database in {folder}: `apt-get install wordnet-base`, or give")
        print("the folder that holds its data.noun / index.noun files")
        return 2
    related = related_words(folder)
    lines = [f"{stem}\t{' '.join(sorted(related[stem]))}" for stem in sorted(related)]
    OUT.write_text(_HEADER + _licence(folder) + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines):,} words → {OUT} ({OUT.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
