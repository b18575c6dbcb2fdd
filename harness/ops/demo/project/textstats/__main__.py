"""python -m textstats FILE... [--top N]: wc-style counts per file."""

import argparse
import sys

from textstats import count_words, top_words


def positive_int(value: str) -> int:
    n = int(value)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value}")
    return n


def stats(path: str) -> dict:
    words = lines = chars = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            words += count_words(line)
            lines += 1
            chars += len(line)
    return {"file": path, "words": words, "lines": lines, "chars": chars}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="textstats")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=positive_int)
    args = parser.parse_args(argv)
    status, rows = 0, []
    for path in args.files:
        try:
            rows.append(stats(path))
        except OSError as e:
            print(f"textstats: {path}: {e.strerror}", file=sys.stderr)
            status = 1
    for row in rows:
        print(f"{row['words']} {row['lines']} {row['chars']} {row['file']}")
        if args.top:
            with open(row["file"], encoding="utf-8") as f:
                for word, count in top_words(f.read(), args.top):
                    print(f"  {count} {word}")
    if len(rows) > 1:
        total = [sum(r[k] for r in rows) for k in ("words", "lines", "chars")]
        print(f"{total[0]} {total[1]} {total[2]} total")
    return status


if __name__ == "__main__":
    sys.exit(main())
