"""textstats: word, line and character counts for plain text."""

from collections import Counter


def words(text: str) -> list[str]:
    """The words of `text`: runs of letters or digits, with ' and - allowed inside a word."""
    out, current = [], []
    for ch in text + " ":
        if ch.isalnum() or (ch in "'-" and current):
            current.append(ch)
        elif current:
            out.append("".join(current).rstrip("'-"))
            current = []
    return [w for w in out if w]


def count_words(text: str) -> int:
    """How many words `text` has."""
    return len(words(text))


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    """The `n` most frequent case-folded words, ties broken alphabetically."""
    counts = Counter(w.casefold() for w in words(text))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
